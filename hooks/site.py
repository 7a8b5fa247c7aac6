"""MkDocs hooks: load and validate the catalog once, add the generated reference pages, fail on
a bare figure, and ship the calculator's Python and the local Pyodide runtime."""

from __future__ import annotations

import gc
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.config.defaults import MkDocsConfig  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File, Files, InclusionLevel  # noqa: E402
from mkdocs.structure.pages import Page  # noqa: E402

from calc.catalog.loader import raw_as_json  # noqa: E402
from calc.catalog.spec import CatalogError  # noqa: E402
from hooks import reference, runtime  # noqa: E402
from hooks.calculator_page import RUNTIME_BEGIN, hold_theme_script  # noqa: E402
from hooks.figures import bare_figures, site_catalog, site_catalog_raw, take_problems  # noqa: E402

PYODIDE_SCRIPTS = ("pyodide.mjs", "pyodide.asm.mjs")  # and pyodide.asm.wasm as npm has it; the lock and the stdlib trimmed

# The catalog reference's pages, generated once a build in on_config and added in on_files.
_generated: dict[str, tuple[str, str]] = {}
_date = ["1970-01-01"]  # the catalog's newest date, found once a build in on_config
_one_off = [False]  # `mkdocs build` or `gh-deploy`: the process ends with the build


@event_priority(100)
def on_config(config: MkDocsConfig, **_: object) -> MkDocsConfig:
    try:
        catalog = site_catalog(ROOT)
    except CatalogError as error:
        raise PluginError(f"catalog/{error}") from None
    _generated.clear()
    _generated.update(reference.pages(catalog))
    _date[0] = catalog_date(site_catalog_raw(ROOT))
    # The catalog, the reference pages and the modules now loaded last the whole build: the cyclic
    # collector need not walk them again on each of its full passes (it spent about a tenth of the
    # build doing so). See on_post_build for when they are let go.
    gc.freeze()
    indexes = {path: title for path, (title, _) in _generated.items() if path in (reference.MODELS_INDEX, reference.BOXES_INDEX)}
    for section in config["nav"]:
        if isinstance(section, dict) and reference.SECTION in section:
            items = section[reference.SECTION]
            items[:] = [i for i in items if not (isinstance(i, dict) and set(i.values()) & set(indexes))]
            items.extend({title: path} for path, title in indexes.items())
            break
    else:
        raise PluginError(f"mkdocs.yml: nav has no '{reference.SECTION}' section for the generated catalog pages")
    return config


def on_files(files: Files, config: MkDocsConfig, **_: object) -> Files:
    """The generated pages; a model's or box's page is reached from its index page, not the nav."""
    for path, (_title, markdown) in _generated.items():
        listed = path in (reference.MODELS_INDEX, reference.BOXES_INDEX)
        files.append(File.generated(config, path, content=markdown, inclusion=InclusionLevel.UNDEFINED if listed else InclusionLevel.NOT_IN_NAV))
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


def on_pre_page(page: Page, **_: object) -> Page:
    # The sitemap's date (and sitemap.xml.gz's timestamp) is the catalog's, not the clock's, so
    # two builds of the same sources are byte-identical on any day.
    page.update_date = _date[0]
    return page


@event_priority(-100)  # after the macros plugin has rendered the page
def on_page_markdown(markdown: str, page: Page, **_: object) -> str:
    checked = take_problems(page.file.src_uri)
    if checked:
        raise PluginError("figures that disagree with the catalog:\n" + "\n".join(f"  {p}" for p in checked))
    written = page.file.content_string
    found = [(f"docs/{page.file.src_uri}:{line}", text) for line, text in bare_figures(written)]
    # As rendered, the check skips more: a page the macros left as written (but for the final line
    # break the templates drop) has nothing more to show.
    if markdown.rstrip("\n") != written.rstrip("\n"):
        found += [(f"docs/{page.file.src_uri}, as rendered, line {line}", text) for line, text in bare_figures(markdown, rendered=True)]
    if found:
        where = "\n".join(f"  {at}: bare figure {text!r}" for at, text in dict.fromkeys(found))
        raise PluginError(
            f'figures neither rendered from the catalog nor checked:\n{where}\nRender it with {{{{ fig(...) }}}} or write it as {{{{ checked("...", ...) }}}}.'
        )
    return markdown


_SITE_SCRIPT = re.compile(r'<script src="[^"]*javascripts/site\.js"></script>\n?')
_BUNDLE = re.compile(r'<script src="[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js"></script>')


def site_script_first(output: str) -> str:
    """docs/javascripts/site.js placed before Material's script, which asks for the search index
    as it runs: site.js holds that request until the reader goes to search."""
    site, bundle = _SITE_SCRIPT.search(output), _BUNDLE.search(output)
    if not site or not bundle or site.start() < bundle.start():
        return output
    without = output[: site.start()] + output[site.end() :]
    return without[: bundle.start()] + site.group(0).rstrip("\n") + "\n" + without[bundle.start() :]


def on_post_page(output: str, page: Page, **_: object) -> str:
    """site.js runs before Material's script; a page that starts the calculators' Python holds
    Material's script until it has loaded."""
    output = site_script_first(output)
    if RUNTIME_BEGIN not in output:
        return output
    try:
        return hold_theme_script(output, page.file.src_uri)
    except ValueError as error:
        raise PluginError(str(error)) from None


def on_post_template(output_content: str, **_: object) -> str:
    """The theme's own pages (404.html) get site.js first too."""
    return site_script_first(output_content)


def on_startup(command: str, **_: object) -> None:
    _one_off[0] = command in ("build", "gh-deploy")


def on_build_error(**_: object) -> None:
    gc.unfreeze()


def on_post_build(config: MkDocsConfig, **_: object) -> None:
    """The calculator's runtime, only what the page loads (hooks/runtime.py says how each list is
    found), its Python and the catalog as JSON; Material's assets without source maps."""
    site = Path(config["site_dir"])
    runtime_dir = site / "runtime"
    pyodide = ROOT / runtime.PYODIDE
    if not pyodide.is_dir():
        raise PluginError("node_modules has no pyodide: run `npm ci` (make deps installs it)")
    (runtime_dir / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_SCRIPTS:
        (runtime_dir / "pyodide" / name).write_text(strip_source_map((pyodide / name).read_text(encoding="utf-8")), encoding="utf-8")
    shutil.copy2(pyodide / "pyodide.asm.wasm", runtime_dir / "pyodide" / "pyodide.asm.wasm")
    (runtime_dir / "pyodide" / "pyodide-lock.json").write_text(
        runtime.trimmed_lock((pyodide / "pyodide-lock.json").read_text(encoding="utf-8")), encoding="utf-8"
    )
    (runtime_dir / "pyodide" / "python_stdlib.zip").write_bytes(runtime.trimmed_stdlib(pyodide / "python_stdlib.zip"))
    for path, source in runtime.shipped_calc(ROOT).items():
        target = site / "py" / "calc" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    (site / "py" / "catalog.json").write_text(raw_as_json(site_catalog_raw(ROOT)), encoding="utf-8")
    for source_map in (site / "assets").rglob("*.map"):
        source_map.unlink()
        generated = source_map.with_suffix("")
        if generated.is_file():
            generated.write_text(strip_source_map(generated.read_text(encoding="utf-8")), encoding="utf-8")
    for worker in (site / "assets" / "javascripts" / "workers").glob("search.*.min.js"):
        worker.write_text(mend_token_set(worker.read_text(encoding="utf-8"), worker.name), encoding="utf-8")
    lunr = site / "assets" / "javascripts" / "lunr"
    search = next((plugin for name, plugin in config["plugins"].items() if name.endswith("search")), None)
    languages = [lang for lang in (search.config.lang if search else None) or ["en"] if lang != "en"]
    if lunr.is_dir() and not languages:  # the search worker loads no lunr language for English alone
        shutil.rmtree(lunr)
    # A one-off build ends here: what is alive now is frozen too, so the collection Python runs on
    # exit does not walk it all (a tenth of the build's own time). Serving, or built from Python,
    # the next build must be able to collect this one's objects.
    if _one_off[0]:
        gc.freeze()
    else:
        gc.unfreeze()


# lunr 2.3.9's TokenSet (in Material's search worker) merges equal nodes by a key of each edge's
# label and child id written end to end: with digit labels, two different nodes can write the same
# key (label "1" to node 23 beside label "4" to node 5, and "1" to 2 beside "3" to 45: "12345"), so
# the merged automaton holds words the index does not, and a query that reaches one fails in the
# browser ("Invalid query", then a TypeError reading '_index'). A separator after each id makes the
# key one node's alone. Which pages trip it depends on the figures they print, so it is mended here.
_TOKEN_SET_KEY = "e=e+s+o.id}return e},t.TokenSet.prototype.intersect"
_TOKEN_SET_KEY_MENDED = 'e=e+s+o.id+";"}return e},t.TokenSet.prototype.intersect'


def mend_token_set(script: str, name: str) -> str:
    """Material's search worker with lunr's TokenSet key made unambiguous (see _TOKEN_SET_KEY)."""
    if script.count(_TOKEN_SET_KEY) != 1:
        raise PluginError(f"{name}: lunr's TokenSet.toString not found as mkdocs-material's pinned version writes it; check the mend")
    return script.replace(_TOKEN_SET_KEY, _TOKEN_SET_KEY_MENDED)


_SOURCE_MAP = re.compile(r"\n?/[/*]# sourceMappingURL=[^\n]*?(?:\*/)?\s*$")


def strip_source_map(text: str) -> str:
    """A script or stylesheet without its sourceMappingURL comment (the maps are not shipped).
    The comment is the file's last line, so only the text from its last mention is searched."""
    at = text.rfind("# sourceMappingURL=")
    if at < 0:
        return text
    start = max(0, at - 3)
    return text[:start] + _SOURCE_MAP.sub("\n", text[start:])
