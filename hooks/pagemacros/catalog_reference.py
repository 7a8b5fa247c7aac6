"""Macros of the catalog reference's index page."""

from __future__ import annotations

from hooks.pagemacros.build import Build


def catalog_index(build: Build) -> str:
    from hooks.reference import index_links

    return index_links(build.catalog)


MACROS = (catalog_index,)
