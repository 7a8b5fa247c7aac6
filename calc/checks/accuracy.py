"""How close the config model (calc/engine/kvlayout.py) comes to what vLLM printed, row by row.

An observation is one start whose architecture is known: a catalog start (architecture from
catalog/models.yaml) or a public log (architecture from a shipped config.json, listed in
models/observations.yaml). The model is given the pool the start had (the pin, or the pool the
log printed) and predicts what the log printed: the token count, or on V0 builds the block
count. A printed pool is rounded, so each row also says whether the printed figure lies inside
what the rounded pool allows ("within printed precision"). Rows the rules cannot explain stay,
with what we suspect. A hybrid runs in the mamba cache mode its log names, else in the mode its
release gives the prefix caching the start ran with (stated by the log or the post, else the
release's default: off for hybrids up to 0.27.1), as calc/engine/kvlayout.py's mamba_cache_mode says.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from calc.catalog.entries import Settings
from calc.catalog.model import Catalog
from calc.checks import records
from calc.engine import hfconfig, kvlayout, weights
from calc.jsontext import JsonObject
from calc.logs import logread
from calc.units import SIZE_UNITS, InputError


@dataclass(frozen=True)
class Observation:
    label: str
    source: str
    shape: hfconfig.Shape
    settings: kvlayout.Settings
    engine_version: str | None
    max_model_len: int
    pool_low: int  # the pool the start may have had, from its printed rounding
    pool_high: int
    printed: int  # tokens, or blocks on V0, or the bytes one request needs
    quantity: str  # "tokens", "blocks" or "needed" (the one-request check's "X GiB KV cache is needed")
    suspicion: str | None = None
    weights_loaded: int | None = None  # "Model loading took", where the log prints it and a config is shipped
    engine: str = "vllm"  # or "sglang": its memory pool's rules (calc/engine/kvlayout.py)
    printed_half: int = 0  # half the last printed digit of a printed size ("needed")

    @property
    def pool(self) -> int:
        return (self.pool_low + self.pool_high) // 2

    @property
    def rules(self) -> str:
        """Whose rules model the start: a vLLM build's, or SGLang's memory pool."""
        return "SGLang memory_pool.py" if self.engine == "sglang" else kvlayout.version(self.engine_version).name


@dataclass(frozen=True)
class Row:
    observation: Observation
    family: str
    predicted: int
    low: int
    high: int
    error: Fraction  # (predicted - printed) / printed
    predicted_per_token: Fraction  # what a token adds, the part that grows with context
    printed_pool_per_token: Fraction  # pool / printed tokens (per block on V0: pool / blocks / 16)

    @property
    def within_precision(self) -> bool:
        half = self.observation.printed_half
        return self.low - half <= self.observation.printed <= self.high + half


def _count(o: Observation, pool: int, req: kvlayout.Request) -> int:
    if o.quantity == "needed":  # what one request of max_model_len holds, whatever the pool
        return req.bytes_per_request
    if o.engine == "sglang":
        return kvlayout.sglang_tokens(o.shape, o.settings, pool)
    p = kvlayout.pool(o.shape, o.settings, o.max_model_len, pool, kvlayout.version(o.engine_version), req)
    return p.blocks if o.quantity == "blocks" else p.tokens


def row(o: Observation) -> Row:
    req = kvlayout.request(o.shape, o.settings, o.max_model_len, kvlayout.version(o.engine_version))
    predicted = _count(o, o.pool, req)
    a, b = _count(o, o.pool_low, req), _count(o, o.pool_high, req)
    if o.engine == "sglang":
        per_token = Fraction(kvlayout.sglang_cell_bytes(o.shape, o.settings))
    else:
        per_token = req.bytes_per_token
    tokens = o.max_model_len if o.quantity == "needed" else o.printed * (16 if o.quantity == "blocks" else 1)
    return Row(o, o.shape.family, predicted, min(a, b), max(a, b), Fraction(predicted - o.printed, o.printed),
               per_token, Fraction(o.pool, tokens))  # fmt: skip


def weights_error(o: Observation) -> tuple[int, Fraction] | None:
    """The weights a rank holds by the config's count, and its error against the log's
    "Model loading took" (which also holds whatever else loading allocated)."""
    if o.weights_loaded is None:
        return None
    modeled = weights.per_rank(o.shape, o.settings.tp).model
    return modeled, Fraction(modeled - o.weights_loaded, o.weights_loaded)


def family_errors(rows: list[Row], covered_only: bool = False) -> dict[str, Fraction | None]:
    """Mean absolute error by family, every family listed (None where no row has it); with
    covered_only, over the rows the rules claim to cover (no suspicion written beside them)."""
    out: dict[str, Fraction | None] = {}
    for family in hfconfig.FAMILIES:
        errors = [abs(r.error) for r in rows if r.family == family and not (covered_only and r.observation.suspicion)]
        out[family] = sum(errors, Fraction(0)) / len(errors) if errors else None
    return out


def printed_pool(text: str, what: str) -> tuple[int, int]:
    """The bytes a pool printed as '2.89 GiB' may have held: half a unit of its last digit either
    side. An exact byte count ('10000000000 B', '16e9 B') is its own range."""
    number, _, unit = text.strip().partition(" ")
    if unit not in SIZE_UNITS:
        raise InputError(f"{what}: found {text!r}, expected a printed pool such as '2.89 GiB'")
    value = Decimal(number)
    scale = SIZE_UNITS[unit]
    if unit == "B":
        return int(value), int(value)
    exponent = value.as_tuple().exponent
    half = Decimal(1).scaleb(exponent if isinstance(exponent, int) else 0) / 2
    return int((value - half) * scale), int((value + half) * scale)


# How a vLLM log states prefix caching: the engine config line's resolved setting
# ("enable_prefix_caching=False"), the argument dump ("'enable_prefix_caching': True"), a command
# line's flag, or the hybrid's own line ("Mamba cache mode is set to 'align' ... when prefix
# caching is enabled", vllm/model_executor/models/config.py from 0.15.0).
_PREFIX_SETTING = re.compile(r"""enable[_-]prefix[_-]caching['"]?\s*([:=])\s*(True|False)\b""")
_PREFIX_FLAG = re.compile(r"(?<![\w-])--(no-)?enable-prefix-caching\b")
_MAMBA_MODE = re.compile(r"Mamba cache mode is set to '(align|all|none)'")


def log_mamba_cache_mode(text: str) -> tuple[bool | None, str | None]:
    """Whether a log's start ran with prefix caching, and the mamba cache mode where a line names
    it; None for what the log does not state. The engine config line's value is the one vLLM
    resolved, so it outranks the arguments and the command that asked for one."""
    settings = _PREFIX_SETTING.findall(text)
    resolved = [value for sep, value in settings if sep == "="]
    asked = [value for sep, value in settings if sep == ":"]
    flags = _PREFIX_FLAG.findall(text)
    prefix: bool | None = None
    if resolved or asked:
        prefix = (resolved or asked)[-1] == "True"
    elif flags:
        prefix = flags[-1] != "no-"
    named = _MAMBA_MODE.findall(text)
    mode = named[-1] if named else None
    if mode is not None and prefix is None:
        prefix = True  # the line is printed only when prefix caching is on
    return prefix, mode


def public_observations(entries: list[records.Observation], configs: dict[str, JsonObject], catalog: Catalog, logs: dict[str, str]) -> list[Observation]:
    """models/observations.yaml's entries. Each names its architecture one of three ways: a
    shipped config.json (`config`, already read into `configs`), a catalog model
    (`catalog_model`), or architecture fields written out with their source (`architecture`).
    An entry with a `log` (in logs/public/, its text in `logs`) takes the pool, the printed count
    and whatever settings the log states from the log reader; an entry quoting a post that is no
    log writes them out."""
    out = []
    for e in entries:
        where = e.where
        shape = _shape(e, configs, catalog)
        stated: dict[str, int | str | None] = {
            "tp": e.tp,
            "kv_cache_dtype": e.kv_cache_dtype,
            "max_model_len": e.max_model_len,
            "engine_version": e.engine_version,
        }
        given: dict[str, int | str] = {k: v for k, v in stated.items() if v is not None}
        if e.log is not None:
            if e.log not in logs:
                raise InputError(f"{where}.log: found {e.log!r}, expected a log in logs/public/")
            r = logread.read_log(logs[e.log])
            engine = r.engine.value if r.engine is not None else "vllm"
            read = {"tp": r.tensor_parallel_size, "kv_cache_dtype": r.kv_cache_dtype, "max_model_len": r.max_model_len, "engine_version": r.engine_version}
            given = {**{k: f.value for k, f in read.items() if f is not None}, **given}
            pool, count = r.available_kv_bytes, r.kv_tokens or r.gpu_blocks or r.kv_needed_bytes
            if pool is None or count is None:
                raise InputError(f"{where}.log: {e.log} prints no pool, or none of a token count, a block count, the KV one request needs")
            low, high = math.floor(pool.low), math.ceil(pool.high)
            printed = count.value
            quantity = "tokens" if r.kv_tokens else "blocks" if r.gpu_blocks else "needed"
            half = math.ceil(count.half) if quantity == "needed" else 0
            # the loading line is compared only where the config is the checkpoint's own
            own = e.config is not None and e.checkpoint_config
            loaded = r.model_loading_bytes.value if r.model_loading_bytes is not None and own else None
            prefix, mode = log_mamba_cache_mode(logs[e.log])
        else:
            engine = "vllm"
            low, high = printed_pool(str(e.pool), f"{where}.pool")
            printed, quantity = e.tokens if e.tokens is not None else e.blocks, "tokens" if e.tokens is not None else "blocks"
            if printed is None:
                raise InputError(f"{where}: found neither tokens nor blocks, expected the count the post printed beside its pool")
            half = 0
            loaded = None
            prefix, mode = None, None
        if e.prefix_caching is not None:  # what the post states, where it is no log (read as true or false)
            prefix = e.prefix_caching
        if engine == "sglang":  # SGLang's pool does not depend on the context length
            given.setdefault("max_model_len", 0)
        if "max_model_len" not in given:
            raise InputError(f"{where}.max_model_len: found nothing, expected the length the start ran at")
        dtype = str(given.get("kv_cache_dtype", "auto"))
        release = str(given["engine_version"]) if "engine_version" in given else None
        # a hybrid's mode: the log's own line where it names one, else the build's rule for the
        # prefix caching the start ran with (stated, or the build's default)
        mode = mode or kvlayout.mamba_cache_mode(shape, kvlayout.version(release), prefix)
        out.append(Observation(
            label=e.label, source=e.url, shape=shape,
            settings=kvlayout.Settings(tp=int(given.get("tp", 1)), kv_cache_dtype=dtype, mamba_cache_mode=mode,
                                       prefill_budget=e.prefill_budget, speculative_tokens=e.speculative_tokens),
            engine_version=release, max_model_len=int(given["max_model_len"]),
            pool_low=low, pool_high=high, printed=int(printed), quantity=quantity, suspicion=e.suspicion,
            weights_loaded=loaded, engine=engine, printed_half=half,
        ))  # fmt: skip
    return out


def _shape(e: records.Observation, configs: dict[str, JsonObject], catalog: Catalog) -> hfconfig.Shape:
    if e.config is not None:
        if e.config not in configs:
            raise InputError(f"{e.where}.config: found {e.config!r}, expected one of {', '.join(sorted(configs))}")
        return hfconfig.shape(configs[e.config], f"models/configs/{e.config}/config.json")
    if e.catalog_model is not None:
        model = catalog.models.get(e.catalog_model)
        if model is None or "architecture" not in model:
            raise InputError(f"{e.where}.catalog_model: found {e.catalog_model!r}, expected a catalog model with an architecture")
        return hfconfig.from_architecture(model["architecture"], model["id"])
    if e.architecture is not None:
        return hfconfig.from_architecture(e.architecture, f"observations[{e.index}]")
    raise InputError(f"{e.where}: found none of config, catalog_model, architecture, expected one of them")


def catalog_observations(catalog: Catalog) -> list[Observation]:
    """Every catalog start with a logged token count whose model has architecture fields."""
    out = []
    for d in catalog.deployments.values():
        model = catalog.models[d["model"]]
        arch = model.get("architecture")
        if not arch:
            continue
        shape = hfconfig.from_architecture(arch, model["id"])
        for start in d["starts"]:
            if "kv_tokens" not in start:
                continue
            s: Settings = {**d.get("settings", {}), **start.get("settings", {})}
            label = f"{model['name']}, " + (f"generation {start['generation']}" if "generation" in start else start.get("date", ""))
            if s.get("speculative_tokens"):
                label += f", {s['speculative_tokens']} speculative tokens"
            out.append(Observation(
                label=label, source=f"catalog/starts.yaml, {d['id']}", shape=shape,
                settings=kvlayout.Settings(tp=d["tp"], kv_cache_dtype=s.get("kv_dtype", "auto"), block_size=s.get("block_size"),
                                           prefill_budget=s.get("prefill_budget", 8192), speculative_tokens=s.get("speculative_tokens", 0),
                                           mamba_cache_mode=kvlayout.mamba_cache_mode(shape, kvlayout.version(None))),
                engine_version=None, max_model_len=s["max_model_len"], pool_low=start["kv_pin"], pool_high=start["kv_pin"],
                printed=start["kv_tokens"].count, quantity="tokens", suspicion=arch.get("note"),
            ))  # fmt: skip
    return out
