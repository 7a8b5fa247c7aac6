"""`schema` and `check`: the catalog's JSON Schema files written or checked, the catalog validated."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from calc.catalog.model import Catalog
from calc.present.commands.common import CATALOG_DIR
from calc.units import InputError

SCHEMA_DIR = Path(CATALOG_DIR) / "schema"


def cmd_schema(catalog: Catalog | None, args: argparse.Namespace) -> str:
    from calc.catalog.schema import schemas

    wanted = schemas()
    if args.check:  # the files hold the schemas the catalog's spec gives, as data (compared as JSON reads them)
        stale = [n for n, schema in wanted.items() if _json_file(SCHEMA_DIR / n) != json.loads(json.dumps(schema))]
        if stale:
            raise InputError(f"catalog/schema: {', '.join(stale)} out of date; run: python -m calc schema")
        return f"catalog/schema: {len(wanted)} files up to date"
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, schema in wanted.items():
        (SCHEMA_DIR / name).write_text(json.dumps(schema, indent=2) + "\n")
    return f"catalog/schema: wrote {len(wanted)} files"


def _json_file(path: Path) -> Any:
    """A JSON file's data; None when it is missing or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cmd_check(catalog: Catalog, args: argparse.Namespace) -> str:
    return (
        f"catalog: {len(catalog.boxes)} boxes, {len(catalog.models)} models, {len(catalog.deployments)} deployments, "
        f"{len(catalog.incidents)} incidents, {len(catalog.traces)} traces: valid"
    )
