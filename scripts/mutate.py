"""A mutation run of the figure contract: change each number of the catalog, build, and see.

For every number written in catalog/*.yaml (a figure's value, a count, a setting, a trace poll),
the number is changed by a few per cent in a copy of the project and the site is built into a
temporary directory. A change is caught when the build fails with a message naming the page that
disagrees (a checked literal) or the catalog entry (a value the spec refuses), or when the build
passes and the pages that show the number show the new one. A number whose change leaves every
page as it was reaches no page: the run lists them, so an unused entry or a figure that escaped
the contract is seen.

    python scripts/mutate.py            # every number: prints each outcome, the count and the ratio
    python scripts/mutate.py --sample 3 # a random sample, as the test suite runs it
"""

from __future__ import annotations

import argparse
import html
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calc.catalog.spec import FILES  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from sitebuild import copy_project  # noqa: E402  (the copy the build tests make)

SKIPPED_KEYS = {"id", "date", "generation"}
_NUMBER = re.compile(r"^(?P<num>[0-9][0-9_,]*(?:\.[0-9]+)?)(?P<exp>[eE][+-]?[0-9]+)?(?P<unit>\s?[A-Za-z]+)?$")
_PAGE = re.compile(r"docs/[\w./-]+\.md|catalog/[\w./-]+\.md")
# Numbers the catalog records for the record, which no page shows (the full run lists them): a
# figure's context, such as the tensor-parallel size a published report was read at.
REACHES_NO_PAGE: dict[str, tuple[str, ...]] = {
    "models.yaml": (
        "models[0].weights.per_rank_at_tp",
        "models[0].kv_reports[0].tp",
        "models[0].length_reports[0].tp",
        "models[0].length_reports[0].block_size",
        "models[0].length_reports[0].speculative_tokens",
        "models[3].kv_reports[0].tp",
        "models[3].kv_reports[1].tp",
        "models[3].kv_reports[1].speculative_tokens",
    ),
}


@dataclass(frozen=True)
class Number:
    """One number as written in a catalog file, where it stands and what it is changed to."""

    file: str
    path: str
    start: int
    end: int
    text: str
    changed: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.text} -> {self.changed}"


def _changed(text: str) -> str | None:
    match = _NUMBER.match(text)
    if not match or "," in match["num"] and not re.fullmatch(r"[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?", match["num"]):
        return None
    digits = match["num"].replace(",", "").replace("_", "")
    value = Decimal(digits)
    places = len(digits.split(".")[1]) if "." in digits else 0
    step = Decimal(1).scaleb(-places)
    if value == 0:
        new = step
    elif value <= 1 and "." in digits and not match["unit"]:  # a fraction: stay at most 1
        new = (value * Decimal("0.97")).quantize(step)
        new = new if new != value else value - step
    else:
        new = (value * Decimal("1.07")).quantize(step)
        new = new if new != value else value + step
    return f"{new:f}" + (match["exp"] or "") + (match["unit"] or "")


def numbers(catalog: Path) -> list[Number]:
    """Every number written in the catalog's YAML, with its key path and place in the text."""
    import yaml

    out: list[Number] = []
    for name in FILES:
        text = (catalog / f"{name}.yaml").read_text(encoding="utf-8")

        def walk(node: yaml.Node, path: str, key: str, file: str = f"{name}.yaml", source: str = text) -> None:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    walk(v, f"{path}.{k.value}".lstrip("."), k.value)
            elif isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    walk(item, f"{path}[{i}]", key)
            elif isinstance(node, yaml.ScalarNode) and node.style is None and key not in SKIPPED_KEYS:
                written = source[node.start_mark.index : node.end_mark.index]
                changed = _changed(written)
                if changed is not None and written == node.value:
                    out.append(Number(file, path, node.start_mark.index, node.end_mark.index, written, changed))

        walk(yaml.compose(text, Loader=yaml.SafeLoader), "", "")
    return out


def build(root: Path, site: Path) -> tuple[bool, str]:
    shutil.rmtree(site, ignore_errors=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )
    return done.returncode == 0, done.stdout + done.stderr


def pages(site: Path) -> dict[str, str]:
    """Each page's text as a reader sees it (tags dropped, entities decoded)."""
    return {str(p.relative_to(site)): html.unescape(re.sub(r"<[^>]+>", "", p.read_text(encoding="utf-8"))) for p in sorted(site.rglob("*.html"))}


@dataclass(frozen=True)
class Outcome:
    number: Number
    kind: str  # "shows", "fails naming the page", "refused by check", "reaches no page", "fails unclearly"
    detail: str

    @property
    def caught(self) -> bool:
        return self.kind in ("shows", "fails naming the page", "refused by check")


def try_one(project: Path, baseline: dict[str, str], number: Number) -> Outcome:
    """Change one number in the project copy, build it, and put the catalog back."""
    path = project / "catalog" / number.file
    original = path.read_text(encoding="utf-8")
    path.write_text(original[: number.start] + number.changed + original[number.end :], encoding="utf-8")
    try:
        ok, output = build(project, project / "site")
        if not ok:
            if "Traceback" in output:
                return Outcome(number, "fails unclearly", output.strip().splitlines()[-1])
            named = _PAGE.search(output)
            if named:
                return Outcome(number, "fails naming the page", named.group(0))
            if f"catalog/{number.file}" in output:
                return Outcome(number, "refused by check", next(line for line in output.splitlines() if number.file in line).strip())
            return Outcome(number, "fails unclearly", output.strip().splitlines()[-1] if output.strip() else "no message")
        after = pages(project / "site")
        changed = sorted(p for p in after if after[p] != baseline.get(p))
        if changed:
            return Outcome(number, "shows", ", ".join(changed))
        return Outcome(number, "reaches no page", "")
    finally:
        path.write_text(original, encoding="utf-8")


def run(sample: int | None = None, seed: int | None = None, quiet: bool = False) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="mutate-") as temp:
        project = copy_project(Path(temp) / "project")  # a snapshot: edits to the project meanwhile change nothing here
        found = numbers(project / "catalog")
        if sample is not None:
            found = random.Random(seed).sample(found, min(sample, len(found)))
        ok, output = build(project, project / "site")
        if not ok:
            raise SystemExit(f"the unchanged project does not build:\n{output}")
        baseline = pages(project / "site")
        outcomes = []
        for n, number in enumerate(found, 1):
            outcome = try_one(project, baseline, number)
            outcomes.append(outcome)
            if not quiet:
                print(f"[{n}/{len(found)}] {outcome.kind}: {number}" + (f"  ({outcome.detail[:120]})" if outcome.detail else ""), flush=True)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, help="try this many numbers, picked at random")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    outcomes = run(args.sample, args.seed)
    reaching = [o for o in outcomes if o.kind != "reaches no page"]
    caught = [o for o in reaching if o.caught]
    counts = {kind: sum(o.kind == kind for o in outcomes) for kind in dict.fromkeys(o.kind for o in outcomes)}
    print()
    print(f"numbers in the catalog tried: {len(outcomes)}; " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    ratio = len(caught) / len(reaching) if reaching else 1.0
    print(f"caught: {len(caught)} of {len(reaching)} numbers that reach a page (ratio {ratio:.3f})")
    unused = [o.number for o in outcomes if o.kind == "reaches no page"]
    if unused:
        print("reach no page (an unused entry, or a figure outside the contract):")
        print("\n".join(f"  {n}" for n in unused))
    return 0 if len(caught) == len(reaching) else 1


if __name__ == "__main__":
    sys.exit(main())
