"""Your start's fields: their names, labels and choices, and the limits of a paste."""

from __future__ import annotations

from calc.catalog.model import Catalog
from calc.engine import derive
from calc.present.calculators.form import Field, form_fields, form_labels
from calc.present.calculators.start import gated
from calc.units import fmt

NAME = "yourstart"
TITLE = "Your start"
OTHER_BOX = "other"
MODEL_NAME = r"[\w./:@+-]+"  # a Hugging Face id or a path, as vllm serve takes it
LINE_TEXT = 160  # a log line is quoted up to this many characters
# What the page reads of a paste, stated beside the field: a startup log is a few hundred lines (all
# ranks' a few thousand); more is refused at once rather than holding the page while it is read.
PASTE_CHARACTERS = 2**20
PASTE_LINES = 20_000


LABELS = form_labels(NAME)
# What a preset fills: everything a log would otherwise give.
PRESET_FIELDS = ("weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "box", "model")
UNITS = (
    ("", "from the command line pasted with it", False),
    ("b", "bytes (free -b)", False),
    ("k", "KiB (free, free -k)", False),
    ("m", "MiB (free -m)", False),
    ("g", "GiB (free -g)", False),
)


def fields(catalog: Catalog) -> list[Field]:
    presets = [("", "none: your own start", False)] + [(d, f"{catalog.deployments[d]['name']}", False) for d in gated(catalog)]
    boxes = [(b, f"{e['name']} ({e['memory']}, {fmt(derive.box_total(e).figure.size, 'GiB')})", False) for b, e in catalog.boxes.items()]
    boxes.append((OTHER_BOX, "another box: type its total", False))
    fill = {"lines": f"{PASTE_LINES:,}", "paste": str(PASTE_CHARACTERS // 2**20)}
    return form_fields(NAME, {"preset": tuple(presets), "box": tuple(boxes), "free_unit": UNITS}, fill=fill)
