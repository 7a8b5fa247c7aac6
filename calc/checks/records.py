"""The public starts the models are checked against, read once where they enter: the entries of
models/observations.yaml (the config model's checks) and of models/pool_starts.yaml (the predicted
pool's), as frozen records. Each field is checked as it is read, and a bad one is named by its
file and key path, what was found and what was expected; past here, code reads attributes, not
keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from calc.units import InputError

OBSERVATIONS = "models/observations.yaml"
POOL_STARTS = "models/pool_starts.yaml"
# the profile's terms an entry of pool_starts.yaml may quote where the reader does not take their line
PRINTED_TERMS = ("activation_peak", "non_torch", "cuda_graph", "weights")


@dataclass(frozen=True)
class Observation:
    """An entry of models/observations.yaml: a public start, its architecture named one of three
    ways (a shipped config, a catalog model, or architecture fields written out) and its pool and
    count from its log, or written out where the post quoted is no log."""

    where: str  # "models/observations.yaml: observations[i]", for messages
    index: int
    label: str
    url: str
    log: str | None = None
    config: str | None = None
    checkpoint_config: bool = True  # the config is the checkpoint's own, so its loading line is compared
    catalog_model: str | None = None
    architecture: Mapping[str, object] | None = None  # read as a catalog model's architecture (hfconfig.from_architecture)
    pool: str | None = None  # the pool as a post printed it ("2.89 GiB"), where there is no log
    tokens: int | None = None
    blocks: int | None = None
    tp: int | None = None
    kv_cache_dtype: str | None = None
    max_model_len: int | None = None
    engine_version: str | None = None
    prefix_caching: bool | None = None
    prefill_budget: int = 8192
    speculative_tokens: int = 0
    suspicion: str | None = None


@dataclass(frozen=True)
class PoolStart:
    """An entry of models/pool_starts.yaml: a public log and only what the log does not state."""

    where: str  # "models/pool_starts.yaml: starts[i]", for messages
    index: int
    label: str
    log: str
    config: str
    box: str
    engine_version: str
    max_model_len: int
    url: str | None = None
    tp: int | None = None
    gpu_memory_utilization: Fraction | None = None
    kv_cache_dtype: str = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    weights: str | None = None  # "log", or the weights as a line the reader does not take prints them
    quantization: str | None = None  # --quantization, where the start quantized an unquantized checkpoint as it loaded (fp8)
    total_memory: str | None = None
    printed: Mapping[str, str] = field(default_factory=dict)  # a PRINTED_TERMS term -> its size as printed
    sampler: str | None = None
    experts: str | None = None  # awq_marlin, gptq_marlin, compressed-tensors-wna16-marlin or triton: the int experts' kernel, where the log names none
    speculative_tokens: int | None = None  # None: as the log's speculative config states it, else none


@dataclass(frozen=True)
class GraphLog:
    """An entry of pool_starts.yaml's cuda_graph_logs: a log of vLLM's CUDA graph measurements."""

    log: str
    config: str | None = None
    tp: int | None = None
    box: str | None = None  # the card, where the log is no start's (the attention backend's buffers follow it)


class _Entry:
    """One mapping of a file, its fields taken one by one; a key it does not know is refused."""

    def __init__(self, raw: object, where: str, known: tuple[str, ...]) -> None:
        if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
            raise InputError(f"{where}: found {type(raw).__name__}, expected a mapping of field names to values")
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise InputError(f"{where}.{unknown[0]}: found an unknown field, expected one of {', '.join(known)}")
        self.raw: dict[str, object] = raw
        self.where = where

    def _bad(self, key: str, expected: str) -> InputError:
        return InputError(f"{self.where}.{key}: found {self.raw[key]!r}, expected {expected}")

    def text(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self._bad(key, "text")
        return str(value)

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if value is None:
            raise InputError(f"{self.where}.{key}: found nothing, expected text")
        return value

    def count(self, key: str, minimum: int = 1) -> int | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._bad(key, f"a whole number of at least {minimum}")
        return value

    def required_count(self, key: str, minimum: int = 1) -> int:
        value = self.count(key, minimum)
        if value is None:
            raise InputError(f"{self.where}.{key}: found nothing, expected a whole number of at least {minimum}")
        return value

    def fraction(self, key: str) -> Fraction | None:
        """A fraction as YAML writes it (0.9), read exactly from its digits."""
        value = self.raw.get(key)
        if value is None:
            return None
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValueError
            return Fraction(str(value))
        except ValueError:
            raise self._bad(key, "a fraction such as 0.9") from None

    def switch(self, key: str) -> bool | None:
        value = self.raw.get(key)
        if value is not None and not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def mapping(self, key: str) -> Mapping[str, object] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self._bad(key, "a mapping of field names to values")
        return value


def _listed(data: object, file: str, key: str, required: bool = True) -> list[object]:
    if not isinstance(data, dict):
        raise InputError(f"{file}: found {type(data).__name__}, expected a mapping with {key}")
    value = data.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise InputError(f"{file}: {key}: found {type(value).__name__}, expected a list of entries")
    return value


_OBSERVATION_FIELDS = tuple(f for f in Observation.__dataclass_fields__ if f not in ("where", "index"))


def observations(data: object, file: str = OBSERVATIONS) -> list[Observation]:
    """models/observations.yaml, as loaded from YAML, into its records."""
    out = []
    for i, raw in enumerate(_listed(data, file, "observations")):
        e = _Entry(raw, f"{file}: observations[{i}]", _OBSERVATION_FIELDS)
        out.append(
            Observation(
                where=e.where,
                index=i,
                label=e.required_text("label"),
                url=e.required_text("url"),
                log=e.text("log"),
                config=e.text("config"),
                checkpoint_config=e.switch("checkpoint_config") is not False,
                catalog_model=e.text("catalog_model"),
                architecture=e.mapping("architecture"),
                pool=e.text("pool"),
                tokens=e.count("tokens", 0),
                blocks=e.count("blocks", 0),
                tp=e.count("tp"),
                kv_cache_dtype=e.text("kv_cache_dtype"),
                max_model_len=e.count("max_model_len", 0),
                engine_version=e.text("engine_version"),
                prefix_caching=e.switch("prefix_caching"),
                prefill_budget=e.count("prefill_budget") or 8192,
                speculative_tokens=e.count("speculative_tokens", 0) or 0,
                suspicion=e.text("suspicion"),
            )
        )
    return out


_POOL_FIELDS = tuple(f for f in PoolStart.__dataclass_fields__ if f not in ("where", "index"))


def pool_starts(data: object, file: str = POOL_STARTS) -> list[PoolStart]:
    """models/pool_starts.yaml's starts, as loaded from YAML, into their records."""
    out = []
    for i, raw in enumerate(_listed(data, file, "starts")):
        e = _Entry(raw, f"{file}: starts[{i}]", _POOL_FIELDS)
        printed = e.mapping("printed") or {}
        if set(printed) - set(PRINTED_TERMS) or not all(isinstance(v, str) for v in printed.values()):
            raise e._bad("printed", f"a mapping of {', '.join(PRINTED_TERMS)} to sizes")
        out.append(
            PoolStart(
                where=e.where,
                index=i,
                label=e.required_text("label"),
                log=e.required_text("log"),
                config=e.required_text("config"),
                box=e.required_text("box"),
                engine_version=e.required_text("engine_version"),
                max_model_len=e.required_count("max_model_len"),
                url=e.text("url"),
                tp=e.count("tp"),
                gpu_memory_utilization=e.fraction("gpu_memory_utilization"),
                kv_cache_dtype=e.text("kv_cache_dtype") or "auto",
                max_num_seqs=e.count("max_num_seqs"),
                max_num_batched_tokens=e.count("max_num_batched_tokens"),
                weights=e.text("weights"),
                quantization=e.text("quantization"),
                total_memory=e.text("total_memory"),
                printed={k: str(v) for k, v in printed.items()},
                sampler=e.text("sampler"),
                experts=e.text("experts"),
                speculative_tokens=e.count("speculative_tokens", 0),
            )
        )
    return out


def graph_logs(data: object, file: str = POOL_STARTS) -> list[GraphLog]:
    """models/pool_starts.yaml's cuda_graph_logs, into their records (none where the file has none)."""
    out = []
    for i, raw in enumerate(_listed(data, file, "cuda_graph_logs", required=False)):
        e = _Entry(raw, f"{file}: cuda_graph_logs[{i}]", ("log", "config", "tp", "box"))
        out.append(GraphLog(e.required_text("log"), e.text("config"), e.count("tp"), e.text("box")))
    return out
