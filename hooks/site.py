"""MkDocs hooks: load and validate the catalog once, add the generated reference pages, fail on
a bare figure, and ship the calculator's Python and the local Pyodide/PyScript runtime."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

from calc.catalog import CatalogError, raw_as_json  # noqa: E402
from hooks import reference  # noqa: E402
from hooks.calculator_page import calc_sources  # noqa: E402
from hooks.figures import bare_figures, site_catalog, site_catalog_raw, take_problems  # noqa: E402

PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")


@event_priority(100)
def on_config(config, **_):
    try:
        catalog = site_catalog(ROOT)
    except CatalogError as error:
        raise PluginError(f"catalog/{error}") from None
    generated = reference.pages(catalog)
    for section in config["nav"]:
        if isinstance(section, dict) and reference.SECTION in section:
            items = section[reference.SECTION]
            items[:] = [i for i in items if not (isinstance(i, dict) and set(i.values()) & set(generated))]
            models = [{title: path} for path, (title, _) in generated.items() if path.startswith("catalog/models/")]
            boxes = [{title: path} for path, (title, _) in generated.items() if path.startswith("catalog/boxes/")]
            items.extend([{"Models": models}, {"Boxes": boxes}])
            break
    else:
        raise PluginError(f"mkdocs.yml: nav has no '{reference.SECTION}' section for the generated catalog pages")
    return config


def on_files(files, config, **_):
    catalog = site_catalog(ROOT)
    for path, (_, markdown) in reference.pages(catalog).items():
        files.append(File.generated(config, path, content=markdown))
    return files


def catalog_date(raw: object) -> str:
    """The newest date the catalog records (YYYY-MM-DD): the site's figures are as of that day."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "date" and isinstance(value, str):
                    found.append(value if len(value) == 10 else value + "-01")
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(raw)
    return max(found, default="1970-01-01")


def on_pre_page(page, **_):
    # The sitemap's date (and sitemap.xml.gz's timestamp) is the catalog's, not the clock's, so
    # two builds of the same sources are byte-identical on any day.
    page.update_date = catalog_date(site_catalog_raw(ROOT))
    return page


@event_priority(-100)  # after the macros plugin has rendered the page
def on_page_markdown(markdown, page, **_):
    checked = take_problems(page.file.src_uri)
    if checked:
        raise PluginError("figures that disagree with the catalog:\n" + "\n".join(f"  {p}" for p in checked))
    found = [(f"docs/{page.file.src_uri}:{line}", text) for line, text in bare_figures(page.file.content_string)]
    found += [(f"docs/{page.file.src_uri}, as rendered, line {line}", text) for line, text in bare_figures(markdown, rendered=True)]
    if found:
        where = "\n".join(f"  {at}: bare figure {text!r}" for at, text in dict.fromkeys(found))
        raise PluginError(
            f'figures neither rendered from the catalog nor checked:\n{where}\nRender it with {{{{ fig(...) }}}} or write it as {{{{ checked("...", ...) }}}}.'
        )
    return markdown


def on_post_build(config, **_):
    site = Path(config["site_dir"])
    runtime = site / "runtime"
    modules = ROOT / "node_modules"
    pyodide = modules / "pyodide"
    pyscript = modules / "@pyscript" / "core" / "dist"
    if not pyodide.is_dir() or not pyscript.is_dir():
        raise PluginError("node_modules has no pyodide or @pyscript/core: run `npm ci` (make deps installs it)")
    (runtime / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_FILES:
        shutil.copy2(pyodide / name, runtime / "pyodide" / name)
    shutil.copytree(pyscript, runtime / "pyscript", dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.map"))
    for path in calc_sources():
        target = site / "py" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target)
    (site / "py" / "catalog.json").write_text(raw_as_json(site_catalog_raw(ROOT)), encoding="utf-8")
