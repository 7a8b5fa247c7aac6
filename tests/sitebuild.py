"""Building the site, or a copy of the project with one thing changed, for the build tests."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("mkdocs.yml", "catalog", "calc", "hooks", "docs", "models", "logs")


@dataclass
class Build:
    site: Path
    returncode: int
    output: str

    def page(self, path: str) -> str:
        return (self.site / path / "index.html").read_text(encoding="utf-8")

    def text(self, path: str) -> str:
        """A page's text as a reader sees it: tags dropped, entities decoded."""
        return html.unescape(re.sub(r"<[^>]+>", "", self.page(path)))

    def all_html(self) -> dict[str, str]:
        return {str(p.relative_to(self.site)): p.read_text(encoding="utf-8") for p in self.site.rglob("*.html")}


def copy_project(target: Path) -> Path:
    """The files a build reads, copied into `target` (node_modules linked, not copied)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in PROJECT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    (target / "node_modules").symlink_to(ROOT / "node_modules")
    return target


def build(root: Path, site_dir: Path | None = None) -> Build:
    if os.environ.get("VLLM_SETTINGS_TIER") == "fast":
        raise AssertionError("this test builds the site: mark it @pytest.mark.slow (make test-fast builds nothing)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site_dir or root / "site")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Build(site_dir or root / "site", result.returncode, result.stdout + result.stderr)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
