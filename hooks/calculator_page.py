"""Macros of the calculator page: the build-time result for its default inputs."""

from __future__ import annotations


def register(env, catalog) -> None:
    """Add the calculator page's macros to the macros environment."""
