"""Macros for the pages: the catalog and calc/, and the few renderers pages share.

A page writes {{ fig(x, "GiB") }} for a figure, {{ checked("110.0 GiB", x) }} for a literal the
build recomputes, and calls the table renderers of hooks/pagemacros/, one module for each group
of pages; it never formats a number itself. This module is what mkdocs-macros loads: it makes
the build's state and registers the macros (hooks/pagemacros/__init__.py), and keeps the page
templates compiled between builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs_macros.plugin import MacrosPlugin  # noqa: E402

from hooks.figures import finalize, site_catalog  # noqa: E402
from hooks.pagemacros import register  # noqa: E402
from hooks.pagemacros.build import Build, MacrosEnv, Missing  # noqa: E402
from hooks.pagemacros.model_accuracy import model_accuracy, pool_rows, public_observations  # noqa: E402
from hooks.templates import CompiledTemplates  # noqa: E402

__all__ = ["ROOT", "Missing", "define_env", "model_accuracy", "on_post_build", "on_pre_page_macros", "pool_rows", "public_observations"]

_templates: list[CompiledTemplates] = []  # the page templates of this build, kept once it is done


def define_env(env: MacrosEnv) -> None:
    register(env, Build(env, site_catalog(ROOT), ROOT))


def on_pre_page_macros(env: MacrosPlugin) -> None:
    """Before each page renders: catalog text in {{ ... }} is escaped; macro output is not."""
    env.env.finalize = finalize
    if not _templates or _templates[0].environment is not env.env:  # the plugin's environment of this build
        _templates[:] = [CompiledTemplates(env.env, ROOT)]
        vars(env.env)["compile"] = _templates[0].compile  # the kept templates' compile, over the Environment's method


def on_post_build(env: MacrosPlugin) -> None:
    for templates in _templates:
        templates.save()
