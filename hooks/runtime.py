"""What the calculator page ships, and nothing more: the calc modules the browser imports, Pyodide
without a package lock it never reads and with a standard library cut to the modules that run.

Each list is derived, not typed: calc's files from the imports of the browser's entry modules;
the standard library from the modules Pyodide and the calculators were seen to import in the browser
(hooks/stdlib-modules.txt, written by scripts/stdlib_modules.py) closed over the module-level
imports of calc's browser modules and of any module that list does not hold yet.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import zipfile
from pathlib import Path

from calc.present import html as calc_html
from hooks.buildcache import cache_dir, files_digest, keep_cached

ROOT = Path(__file__).resolve().parent.parent
GLUE = Path("docs", "calculator", "main.py")  # the page's glue, the browser's entry module
PYODIDE = Path("node_modules", "pyodide")  # the npm packages the runtime is copied from
STDLIB_SEEN = Path(__file__).with_name("stdlib-modules.txt")


def module_imports(source: str, module: str, is_package: bool = False, everywhere: bool = False) -> set[str]:
    """Absolute names a module imports: at module level (what runs when it is imported), or
    `everywhere` (function bodies too). `from a import b` yields a and a.b (b may be a module)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not everywhere and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, *([child.module] if child.module else [])])
                else:
                    base = child.module or ""
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names if alias.name != "*")
            visit(child)

    visit(ast.parse(source))
    return found


_parsed: dict[tuple[str, int, int, str, bool, bool], set[str]] = {}


def file_imports(path: Path, module: str, is_package: bool, everywhere: bool) -> set[str]:
    """module_imports of a file, parsed again only when the file changes (a serve rebuilds often)."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, module, is_package, everywhere)
    if key not in _parsed:
        _parsed[key] = module_imports(path.read_text(encoding="utf-8"), module, is_package, everywhere)
    return _parsed[key]


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


# --- calc/ ----------------------------------------------------------------------------------


def _calc_file(root: Path, module: str) -> tuple[Path, bool] | None:
    """calc.a.b -> calc/a/b.py or calc/a/b/__init__.py (with whether it is a package), if there."""
    base = root.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py"), False
    return None


def browser_calc_files(root: Path = ROOT) -> list[str]:
    """calc's files the browser imports (see _browser_calc_files), kept in the build cache by the
    digest of calc's sources and the glue: parsing them costs a build more than the rest."""
    cache = cache_dir(root) / f"calc-files-{sources_digest(root)}.json"
    try:
        kept: list[str] = json.loads(cache.read_text(encoding="utf-8"))
        return kept
    except (OSError, ValueError):
        files = _browser_calc_files(root)
        keep_cached(cache, json.dumps(files).encode(), "calc-files-*.json")
        return files


def _browser_calc_files(root: Path) -> list[str]:
    """calc's files the browser imports, as paths under calc/ ("html.py", "calculators/start.py"):
    the closure of the glue's imports of calc over every import in calc's modules (function
    bodies too, as the browser may reach them on any edit)."""
    files: set[str] = set()
    todo = sorted(file_imports(root / GLUE, "__main__", False, everywhere=True))
    # calc/present/html.py imports each calculator by its name (importlib), which no import statement
    # shows; a calculator is a module or a package
    todo += [f"{calc_html.PACKAGE}.{name}" for name in calc_html.CALCULATORS]
    while todo:
        for module in _parents(todo.pop()):
            found = _calc_file(root, module) if module.split(".")[0] == "calc" else None
            path = str(found[0].relative_to(root / "calc")) if found else None
            if found and path is not None and path not in files:
                files.add(path)
                todo.extend(file_imports(found[0], module, found[1], everywhere=True))
    return sorted(files)


def shipped_calc(root: Path = ROOT) -> dict[str, str]:
    """calc's browser files as the site ships them (browser_source), by path under calc/; kept in
    the build cache by the digest of calc's sources and the glue."""
    cache = cache_dir(root) / f"calc-shipped-{sources_digest(root)}.json"
    try:
        kept: dict[str, str] = json.loads(cache.read_text(encoding="utf-8"))
        return kept
    except (OSError, ValueError):
        shipped = {path: browser_source((root / "calc" / path).read_text(encoding="utf-8"), path) for path in browser_calc_files(root)}
        keep_cached(cache, json.dumps(shipped).encode(), "calc-shipped-*.json")
        return shipped


def browser_source(source: str, name: str) -> str:
    """A calc module as the browser gets it: the same code without its docstrings and comments (a
    third of the bytes, which no reader of the page needs). Its syntax tree is checked equal to
    the source's, docstrings aside, so what runs is what the tests ran."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    text = ast.unparse(tree) + "\n"
    if ast.dump(ast.parse(text)) != ast.dump(tree):
        raise ValueError(f"calc/{name}: its code without docstrings does not read back as the same code")
    return text


# --- Pyodide --------------------------------------------------------------------------------


def trimmed_lock(text: str) -> str:
    """The package lock with no packages: the calculators load none."""
    lock = json.loads(text)
    return json.dumps({**lock, "packages": {}}, separators=(",", ":"))


def _zip_entries(names: set[str], module: str) -> list[str]:
    path = module.replace(".", "/")
    return [candidate for candidate in (f"{path}.py", f"{path}/__init__.py") if candidate in names]


def stdlib_modules(stdlib: zipfile.ZipFile, root: Path = ROOT) -> set[str]:
    """Entries of the stdlib zip to keep: the modules seen at run time, plus the module-level
    import closure of calc's browser modules over what that list does not already hold."""
    names = set(stdlib.namelist())
    seen = {line.strip() for line in STDLIB_SEEN.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")}
    roots = set(seen)
    for path in browser_calc_files(root):
        module = "calc." + path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        roots |= file_imports(root / "calc" / path, module, path.endswith("__init__.py"), everywhere=False)
    keep: set[str] = set()
    todo = sorted(roots)
    while todo:
        module = todo.pop()
        for part in _parents(module):
            for entry in _zip_entries(names, part):
                if entry in keep:
                    continue
                keep.add(entry)
                if part not in seen:  # a module the run did not import: follow what it imports
                    source = stdlib.read(entry).decode("utf-8")
                    todo.extend(module_imports(source, part, entry.endswith("__init__.py")))
    return keep


def trimmed_stdlib(path: Path, root: Path = ROOT) -> bytes:
    """The npm package's python_stdlib.zip with only the kept modules, entries in their order,
    the standard library's sources without their docstrings and comments (stdlib_source).

    Finding the entries and compressing them take a second or two, so both are kept in
    node_modules/.cache: the entries by a digest of the npm zip's size and time, the list of
    modules seen and calc's sources; the zip by the npm zip's and the entries' digest, so an edit
    to calc that imports nothing new compresses nothing.
    """
    stat = path.stat()
    where = [str(path), stat.st_size, stat.st_mtime_ns]
    listed = cache_dir(root) / f"stdlib-keep-{_digest(*where, STDLIB_SEEN.read_text(encoding='utf-8'), sources_digest(root))}.json"
    try:
        keep = set(json.loads(listed.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        with zipfile.ZipFile(path) as stdlib:
            keep = stdlib_modules(stdlib, root)
        keep_cached(listed, json.dumps(sorted(keep)).encode(), "stdlib-keep-*.json")
    cache = cache_dir(root) / f"python_stdlib-{_digest(*where, sorted(keep), STDLIB_FORM)}.zip"
    if cache.is_file():
        return cache.read_bytes()
    with zipfile.ZipFile(path) as stdlib:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
            for info in stdlib.infolist():
                if info.filename in keep:
                    data = stdlib_source(info.filename, stdlib.read(info))
                    target.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    data = out.getvalue()
    keep_cached(cache, data, "python_stdlib-*.zip")
    return data


STDLIB_FORM = "without docstrings 1"  # in the cached zip's digest: a change here makes it anew


def stdlib_source(name: str, data: bytes) -> bytes:
    """A standard-library module as the page ships it: without docstrings and comments, as
    browser_source gives calc's (the standard library runs under `python -OO`, which drops its
    docstrings too). Pyodide's own packages keep theirs (it reads them as it boots), and a module
    this Python cannot parse (newer syntax) or read back as the same tree goes as it is."""
    if not name.endswith(".py") or name.startswith(("_pyodide/", "pyodide/")):
        return data
    try:
        return browser_source(data.decode("utf-8"), name).encode("utf-8")
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return data


# --- digests ---------------------------------------------------------------------------------


_digests: dict[tuple[tuple[str, int, int], ...], str] = {}


def sources_digest(root: Path) -> str:
    """A digest of every calc source and the glue: what the derived lists depend on. Worked out
    again only when a file's size or time changes (a build asks for it three times)."""
    paths = sorted((root / "calc").rglob("*.py")) + [root / GLUE]
    stamp = tuple((str(path), path.stat().st_size, path.stat().st_mtime_ns) for path in paths)
    if stamp not in _digests:
        _digests.clear()
        _digests[stamp] = files_digest(root, paths)
    return _digests[stamp]


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]
