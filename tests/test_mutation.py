"""A sample of the mutation run (scripts/mutate.py): a few catalog numbers, picked at random,
changed one at a time in a copy of the project; each change must show on the pages that use it,
or fail the build with a message naming the page or the catalog entry. The whole run is
`python scripts/mutate.py`; it prints the count and the ratio."""

from __future__ import annotations

import random
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import mutate  # noqa: E402

pytestmark = pytest.mark.slow  # builds the site or boots Pyodide: make test, not make test-fast


def test_the_numbers_are_found_where_they_are_written() -> None:
    found = mutate.numbers(ROOT / "catalog")
    assert len(found) > 100
    total = next(n for n in found if n.path == "boxes[0].total_memory.value")
    assert (total.file, total.text, total.changed) == ("boxes.yaml", "121.69 GiB", "130.21 GiB")  # x 1.07, two decimals kept
    pin = next(n for n in found if n.path == "deployments[0].starts[1].kv_pin")
    assert (pin.text, pin.changed) == ("10e9 B", "11e9 B")
    share = next(n for n in found if n.path == "boxes[1].serving.gpu_memory_utilization.value")
    assert (share.text, share.changed) == ("0.98", "0.95")  # a fraction moves down, to stay at most 1
    assert not any(n.path.endswith((".date", ".generation", ".id")) for n in found)


def test_a_sample_of_mutations_is_caught() -> None:
    seed = random.randrange(10**6)
    outcomes = mutate.run(sample=2, seed=seed, quiet=True)
    assert len(outcomes) == 2
    for outcome in outcomes:
        if outcome.kind == "reaches no page":
            assert outcome.number.path in mutate.REACHES_NO_PAGE.get(outcome.number.file, ()), f"seed {seed}: {outcome.number} changed no page"
        else:
            assert outcome.caught, f"seed {seed}: {outcome.number}: {outcome.kind} ({outcome.detail})"
