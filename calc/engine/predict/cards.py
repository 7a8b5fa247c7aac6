"""Cards by the total memory torch and vLLM report: from a catalog box, from a typed total, and
the few facts of a card a term depends on (its vendor, NVSwitch multicast, Hopper)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from calc.catalog.entries import Box
from calc.catalog.model import box_choices
from calc.units import GiB, InputError, fmt, parse_size

SMALLEST_CARD = GiB  # no card vLLM runs on has less; a smaller --total-memory is a unit left out (80 for 80 GiB)


# --- cards -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Card:
    id: str
    name: str
    total_bytes: int  # total memory as torch and vLLM report it (torch.cuda.mem_get_info()[1])
    total_text: str  # as the catalog writes it
    source: str
    unified: bool = False  # CPU and GPU share one memory: vLLM reads MemAvailable
    vendor: str = "nvidia"  # "amd": ROCm takes no CUDA graph estimate off the pool
    nvls: bool = True  # NCCL's NVLink SHARP all-reduce can run (non_torch); a card known by its total alone is taken as able
    context_bytes: int | None = None  # what vLLM's worker holds on the idle card at its start snapshot, measured (boxes.yaml in_use_at_start)
    context_source: str = ""


# Boards whose GPUs meet on NVSwitch with multicast (HGX H100, H200, B200): there NCCL's NVLS
# all-reduce runs when NCCL allocates with cuMem, and NCCL's memory outside torch is the board's own
# median with cuMem on or off (non_torch: the fitted H100 starts with it off leave as much).
# NCCL, not vLLM, decides it (NCCL's NCCL_NVLS_ENABLE: NVLink SHARP needs third-generation NVSwitch
# and Hopper or later); vLLM sets NCCL_NVLS_ENABLE=0 only in batch-invariant mode
# (model_executor/layers/batch_invariant.py, 0.19.0), and from 0.11.0 leaves NCCL's cuMem on.
# The B300 and GB200 boards are read as such too: a public run on 8x NVIDIA B300 SXM6 AC names its
# all-reduce 'NV18 full mesh, NVLS multimem' (code index file 54550819132), and a GB200 NVL72
# cluster's notes set NCCL_NVLS_ENABLE=0 against what NVLS did to its steps (code index file 54820622263).
NVLS_BOXES = ("h100-sxm", "h200", "b200", "b300", "gb200")


def card_of_box(box: Box) -> Card:
    """A catalog box (catalog/boxes.yaml) as a card. Only its total_memory is the total torch and
    vLLM report; a box with nothing but the driver's or the vendor's figure cannot be sized here."""
    total = box.get("total_memory")
    if total is None and box.get("memory") == "unified":  # sized from MemAvailable, whatever its total: predict says so
        return Card(str(box["id"]), str(box["name"]), 0, "", "", unified=True)
    if total is None:
        have = next((k for k in ("reported_total", "spec_memory") if k in box), None)
        raise InputError(
            f"--gpu: {box['name']} has no total as torch and vLLM report it in catalog/boxes.yaml"
            + (f" (only its {have.replace('_', ' ')})" if have else "")
            + "; give --total-memory: torch.cuda.mem_get_info()[1] on the card, or the 'total capacity' of torch's out-of-memory message"
        )
    name = str(box["name"])
    vendor = "amd" if name.upper().startswith("AMD") else "nvidia"
    unified = box.get("memory") == "unified"
    held = box.get("in_use_at_start")
    return Card(str(box["id"]), name, int(total.size), str(total.entry), str(total.source or ""), unified, vendor, str(box["id"]) in NVLS_BOXES,
                int(held.size) if held is not None else None, str(held.entry) if held is not None else "")  # fmt: skip


_DECIMAL_SIZE = re.compile(r"^\s*([0-9]+)(?:\.0+)?\s*GB\s*$", re.I)


def sold_size_note(text: str, boxes: Mapping[str, Box]) -> str | None:
    """A --total-memory written as a card is sold ("80GB", "24 GB"): decimal units, a whole number.
    torch and vLLM report less than that in GiB and different from it in GB, so the note names the
    catalog's cards sold at that size and the total each reports, or says where to read one."""
    m = _DECIMAL_SIZE.match(text)
    if m is None:
        return None
    size = parse_size(text, "--total-memory")
    sold = [b for b in boxes.values() if "total_memory" in b and b.get("memory") != "unified" and _sold_as(b) == int(m.group(1))]
    reads = ", ".join(f"{b['id']} {fmt(b['total_memory'].size, 'GiB')}" for b in sold)
    return (
        f"--total-memory {text.strip()} is read as {fmt(size, 'GiB')}, the size a card is sold at; torch and vLLM report another total"
        + (f" (such as {reads}, among the catalog's cards sold at {int(m.group(1))} GB)" if sold else "")
        + ": give --gpu with the card's name, or the total torch reads on the card (torch.cuda.mem_get_info()[1], the 'total capacity' of its "
        "out-of-memory message, the second figure of vLLM's 'Free memory on device' when it refuses a start)"
    )


def _sold_as(box: Box) -> int | None:
    """The whole number of the size a card is sold at, as its spec_memory writes it (80 of '80 GiB', 24 of '24 GB'),
    else as its id or name says it (16 of 'rtx-4060-ti-16gb', 40 of 'NVIDIA A100-40GB')."""
    spec = box.get("spec_memory")
    v = int(spec.size) if spec is not None else 0
    if v and (v % 10**9 == 0 or v % GiB == 0):
        return v // 10**9 if v % 10**9 == 0 else v // GiB
    named = re.search(r"(?<![0-9])([0-9]+)\s*gb\b", f"{box['id']} {box['name']}", re.I)
    return int(named.group(1)) if named else None


# A device name's form-factor words ("NVIDIA A100-PCIE-40GB", "Tesla V100-SXM2-32GB"): read without them
# where the whole name finds no box, so that the card's own words do; "SXM5" is first read as the "SXM" a box names
_FORM_WORDS = re.compile(r"[-\s]+(?:PCIe|SXM[0-9]*|HBM[0-9]*e?)(?=[-\s]|$)", re.I)
_SLOT_WORDS = re.compile(r"[-\s]+(?:PCIe|SXM[0-9]*)(?=[-\s]|$)", re.I)  # the form factor alone, the memory's kind kept
_SXM_N = re.compile(r"(?<=SXM)[0-9]+(?=[-\s]|$)", re.I)
_SIZE_WORD = re.compile(r"[-\s(]+([0-9]+)\s*(?:GB|GiB|G)\)?(?=[-\s]|$)", re.I)


def find_box(boxes: Mapping[str, Box], name: str) -> Box:
    """A catalog box by its id, its name or a device name torch gives it ("NVIDIA H100 80GB HBM3"),
    case, spaces and dashes aside, or by a run of the words of its id or name ("4090", "A100 80GB",
    "GB10"; "NVIDIA GeForce RTX 5090" without the vendor's words) when that names one box, or the one
    box whose name ends there where the others go on to a Ti or SUPER ("4070 Ti", not the "4070 Ti
    SUPER"); a name that fits several ("H100") lists them, an unknown one lists the known. A name none of these finds
    is read again: "SXM5" as the "SXM" a box names, without its form-factor words (_FORM_WORDS), and
    without a size ("RTX 4090 24GB") the box found is sold at (sold_at)."""
    try:
        return _find_box(boxes, name)
    except InputError as first:
        other = None
        for text, size in _readings(name):
            try:
                box = _find_box(boxes, text)
            except _Several as several:  # "H100 80GB": the size keeps the boxes sold at it, where no form-factor word tells them apart
                sold = [b for b in several.fits if size is not None and not _FORM_WORDS.search(name) and sold_at(b, size)]
                if len(sold) == 1:
                    return sold[0]
                if sold:
                    raise _Several(name, sold) from None
                continue
            except InputError:
                continue
            if size is None or sold_at(box, size):
                return box
            other = other or (box, size)
        if other is not None:
            box, size = other
            raise InputError(f"--gpu: found {name!r}: {box['id']} ({box['name']}) is not sold at {size} GB; expected its name without the size, "
                             "or --total-memory for another card") from None  # fmt: skip
        raise first


def _readings(name: str) -> list[tuple[str, int | None]]:
    """The other readings of a card's name, each with the size it gives (GB) if it gives one:
    SXMn as SXM, then without the form-factor words, each with and without its size word."""
    sxm = _SXM_N.sub("", name)
    out: dict[tuple[str, int | None], None] = {}
    for plain in dict.fromkeys((sxm, _SLOT_WORDS.sub(" ", sxm).strip(), _FORM_WORDS.sub(" ", sxm).strip())):
        out[(plain, None)] = None
        for m in _SIZE_WORD.finditer(plain):
            out[(_SIZE_WORD.sub(" ", plain).strip(), int(m.group(1)))] = None
    return [(text, size) for text, size in out if text.strip() != name.strip()]


def sold_at(box: Box, size: int) -> bool:
    """Whether a box is the card sold at `size` GB: its spec_memory (or the size its id or name says),
    else a total torch reports within 15 % below that size (an RTX 3090's 23.58 GiB is a 24 GB card)."""
    sold = _sold_as(box)
    if sold is not None:
        return sold == size
    total = box.get("total_memory")
    return total is not None and size * GiB * 85 // 100 < int(total.size) <= size * GiB


def _find_box(boxes: Mapping[str, Box], name: str) -> Box:
    key = _key(name)
    for box in boxes.values():
        names = box["device_names"]["names"] if "device_names" in box else []
        if key in (
            _key(box["id"]),
            _key(box["name"]),
            _key(str(box["name"]).removeprefix("NVIDIA ")),
            *(_key(n.removeprefix(v)) for n in names for v in ("", "NVIDIA ")),
        ):
            return box
    bare = _key(re.sub(r"^\s*(NVIDIA|AMD)\s+(GeForce\s+|Tesla\s+|Instinct\s+)?", "", name, flags=re.I))  # the vendor's words of a device name
    typed = next((k for k in (key, bare) if k and any(k in _word_runs(box) for box in boxes.values())), "")
    fits = [box for box in boxes.values() if typed and typed in _word_runs(box)]
    if len(fits) == 1 and typed in _word_runs(fits[0], whole=False):
        return fits[0]
    if len(fits) > 1:  # "4070 Ti": the one box whose name ends with the words, where the others go on to a Ti or SUPER ("4070 Ti SUPER")
        ends = [box for box in fits if typed in _tails(box)]
        if len(ends) == 1 and not any(typed in _word_runs(box, whole=False) for box in fits if box is not ends[0]):
            return ends[0]
    if fits and not any(typed in _word_runs(box, whole=False) for box in fits):  # the words before a Ti, SUPER, Ada or Laptop: another card
        others = " and ".join(f"{box['id']} ({box['name']})" for box in fits)
        raise InputError(f"--gpu: found {name!r}, expected a card of catalog/boxes.yaml by its whole name: {others} "
                         + ("is another card" if len(fits) == 1 else "are other cards"))  # fmt: skip
    if fits:
        raise _Several(name, fits)
    raise InputError(f"--gpu: found {name!r}, expected one of {box_choices(boxes, name)}; or --total-memory SIZE, the total torch "
                     "reports for a card the catalog lacks")  # fmt: skip


class _Several(InputError):
    """A card's name that fits several boxes, each of which it could be."""

    def __init__(self, name: str, fits: list[Box]) -> None:
        super().__init__(f"--gpu: found {name!r}, which fits {' and '.join(str(b['id']) for b in fits)}; expected one of them")
        self.fits = fits


# Words that make another card of the words before them ("RTX 4070" is not the "RTX 4070 Ti SUPER",
# "RTX 6000" not the "RTX 6000 Ada"; torch names the 8 GB and 16 GB RTX 4060 Ti alike, so "RTX 4060 Ti"
# is not the "RTX 4060 Ti 16GB"): a run of a box's words stops short of one only where the box ends there
SUFFIXES = frozenset({"ti", "super", "laptop", "mobile", "maxq", "d", "ada", "xt", "xtx", "8gb", "12gb", "16gb"})


def _word_runs(box: Box, whole: bool = True) -> set[str]:
    """Every run of consecutive words of a box's id and of its name, each as _key spells it; not `whole`,
    but a run followed by a word that names another card (SUFFIXES)."""
    runs: set[str] = set()
    for text in (str(box["id"]), str(box["name"])):
        words = [w for w in (_key(w) for w in re.split(r"[\s\-()+]+", text)) if w]
        runs.update(
            "".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1) if whole or j == len(words) or words[j] not in SUFFIXES
        )
    return runs


def _tails(box: Box) -> set[str]:
    """The runs of words that end a box's id or name ("4070ti" of "rtx-4070-ti"), each as _key spells it."""
    tails: set[str] = set()
    for text in (str(box["id"]), str(box["name"])):
        words = [w for w in (_key(w) for w in re.split(r"[\s\-()+]+", text)) if w]
        tails.update("".join(words[i:]) for i in range(len(words)))
    return tails


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


HOPPER = ("h100", "h200", "h800", "h20", "gh200")  # compute capability 9.0: triton_kernels' Hopper layouts


def is_hopper(card_name: str) -> bool:
    return any(k in _key(card_name) for k in HOPPER)


SM100 = ("b200", "b300", "gb200", "gb300")  # compute capability 10.x, data-center Blackwell (not GB10, RTX PRO 6000 or Thor)
# compute capability 7.5 (Tesla T4, GeForce RTX 2080 Ti, TITAN RTX, the Quadro RTX cards): below FlashAttention's 8.0
TURING = ("t4", "2080", "titanrtx", "quadrortx")


def is_turing(card_name: str) -> bool:
    return any(k in _key(card_name) for k in TURING)


VOLTA = ("v100",)  # compute capability 7.0: below FlashAttention's 8.0 and FlashInfer's 7.5 as well
TURING_FLASHINFER_UNTIL = (0, 24)  # FlashInferBackend.supports_compute_capability asks 8.0 from v0.24.0 ("broken on SM75")


def flashinfer_runs_on(card: Card, rel: tuple[int, int]) -> bool:
    """Whether FlashInfer's kernels run on this card in this release (v1/attention/backends/flashinfer.py
    supports_compute_capability, which the attention backend and, from v0.21.0, the top-k/top-p
    sampler ask, v1/sample/ops/topk_topp_sampler.py): compute capability 7.5 to 12.1 up to v0.23.x,
    8.0 to 12.1 from v0.24.0 ('FlashInfer supports SM75+, but is currently broken on SM75'), so
    never on a Volta card and on a Turing one only before v0.24.0."""
    key = _key(card.name)
    return not (any(k in key for k in VOLTA) or (rel >= TURING_FLASHINFER_UNTIL and any(k in key for k in TURING)))


FP8_TURING_FROM = (0, 14)  # quantization/fp8.py Fp8Config.get_min_capability: 80 up to v0.13.0, 75 from v0.14.0 (read in 0.14.0 to 0.23.0)


def fp8_refused(card_name: str, rel: tuple[int, int]) -> str | None:
    """Why vLLM refuses fp8 weights (quant_method fp8, Fp8Config) on this card in this release, None
    where it runs them: its minimum compute capability is 8.0 up to v0.13.x and 7.5 from v0.14.0,
    so a Volta card never, a Turing one from v0.14.0 ('The quantization method fp8 is not supported
    for the current GPU. Minimum capability: ...', vllm/config/vllm.py _get_quantization_config,
    0.13.0). Said as found and expected."""
    key = _key(card_name)
    asks = "8.0" if rel < FP8_TURING_FROM else "7.5"
    where = f"vLLM {rel[0]}.{rel[1]}'s fp8 asks compute capability {asks} or more (quantization/fp8.py Fp8Config.get_min_capability)"
    if any(k in key for k in VOLTA):
        return f"found a compute capability 7.0 card; {where}: expected a card of {asks} or more"
    if rel < FP8_TURING_FROM and any(k in key for k in TURING):
        return f"found a compute capability 7.5 card; {where}: expected --engine-version 0.14.0 or later, or a card of 8.0 or more"
    return None


def is_sm100(card_name: str) -> bool:
    return any(k in _key(card_name) for k in SM100)


# Compute capability 12.x, the Blackwell GeForce and RTX PRO cards and GB10: vLLM's
# is_device_capability_family(120) (vllm/platforms/interface.py).
SM120 = ("5090", "5080", "5070", "5060", "rtxpro", "gb10")


def is_sm120(card_name: str) -> bool:
    return any(k in _key(card_name) for k in SM120)


def runs_flashinfer(card: Card, kv_cache_dtype: str, rel: tuple[int, int] | None = None) -> bool | None:
    """Whether vLLM's attention backend for a non-MLA model on this card is FlashInfer (vllm/platforms/
    cuda.py _get_backend_priorities and the backends' checks, v0.20.0 to v0.33.0): FlashInfer comes
    first on data-center Blackwell and FlashAttention elsewhere; FlashAttention needs compute
    capability 8.0 and takes an fp8 KV cache only as FA3 on Hopper (v1/attention/backends/
    flash_attn.py supports_compute_capability, supports_kv_cache_dtype), so a Turing card, or an fp8
    cache off Hopper, runs FlashInfer. A Volta card runs neither (flashinfer_runs_on): the next in the
    list, Triton, attends and captures whole, as FlashAttention does; so does a Turing card from
    v0.24.0, where FlashInfer's floor is raised to 8.0. None for a card known by its total alone, or
    not NVIDIA's. `rel` None: the newest release read."""
    if card.id == "given" or card.vendor != "nvidia":
        return None
    name = card.name
    if not flashinfer_runs_on(card, rel or (999, 0)):
        return False
    return is_sm100(name) or any(k in _key(name) for k in TURING) or (kv_cache_dtype.startswith("fp8") and not is_hopper(name))


def card_from_total(text: str) -> Card:
    """--total-memory: a card known only by its total, as torch reports it."""
    size = parse_size(text, "--total-memory")
    if size <= 0:
        raise InputError(f"--total-memory: found {text!r}, expected a size above zero such as '79.22 GiB'")
    if size < SMALLEST_CARD:
        raise InputError(
            f"--total-memory: found {text!r}, {fmt(size, 'B')}, expected a card's total of at least {fmt(SMALLEST_CARD, 'GiB', 0)}, "
            "such as '79.22 GiB' (a number without a unit is bytes)"
        )
    return Card("given", f"a card of {text}", size, text, "--total-memory")
