"""What `pip install .` installs: every package of calc/ is listed in pyproject.toml, so a module
split into a package (calc/logs/conclude/, say) is installed with the rest."""

from __future__ import annotations

import tomllib

from conftest import ROOT


def test_every_package_of_calc_is_installed() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "calc").rglob("__init__.py")}
    assert found - listed == set()
    assert {"calc.logs.conclude", "calc.answers.logverdict", "calc.present.calculators.yourstart"} <= listed
