"""The pages' macros, one module for each group of pages they serve, registered from here.

A macro is a plain function; one that reads the build's state (the catalog, the page being
rendered, where problems are recorded) takes it as its first argument, `build`, which is bound
here. Every macro is guarded: what the catalog cannot give fails the build with the page named.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable

from calc import units
from calc.answers import guard, prefetch, report
from calc.engine import budget, derive, fraction, gate, hfconfig, kv, kvlayout, predict, weights
from calc.units import GiB
from hooks import calculator_page
from hooks.pagemacros import catalog_reference, deployment, every_page, kv_pool, memory_budget, model_accuracy, several_models, start_up_memory, traces
from hooks.pagemacros.build import Build, MacrosEnv, guarded

GROUPS = (every_page, deployment, memory_budget, kv_pool, start_up_memory, several_models, model_accuracy, traces, catalog_reference)
CALC_MODULES = (derive, gate, hfconfig, kv, kvlayout, fraction, budget, prefetch, guard, report, units, predict, weights)  # the pages call these by module name


def bound(build: Build, func: Callable[..., object]) -> Callable[..., object]:
    """A macro as a page calls it: the build's state given to it when it asks for it."""
    if next(iter(inspect.signature(func).parameters), None) != "build":
        return func

    def call(*args: object, **kwargs: object) -> object:
        return func(build, *args, **kwargs)

    call.__name__, call.__qualname__, call.__doc__ = func.__name__, func.__qualname__, func.__doc__
    return call


def module(build: Build, mod: types.ModuleType) -> types.SimpleNamespace:
    """A calc module as the pages call it: each of its functions guarded like a macro."""
    return types.SimpleNamespace(**{name: guarded(build, v) if inspect.isfunction(v) else v for name, v in vars(mod).items() if not name.startswith("_")})


def register(env: MacrosEnv, build: Build) -> None:
    """Every macro, filter and variable of the pages, into the macros environment."""
    env.variables.update(
        {
            "catalog": build.catalog,
            "policy": build.catalog.policy,
            **{mod.__name__.rpartition(".")[2]: module(build, mod) for mod in CALC_MODULES},
            "GiB": GiB,
        }
    )
    for group in GROUPS:
        for func in group.MACROS:
            env.macro(guarded(build, bound(build, func)), func.__name__)
    for func in every_page.FILTERS:
        env.filter(func, func.__name__)
    calculator_page.register(env, build.catalog)
