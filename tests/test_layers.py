"""The engine imports nothing above it: no web, SQL or Spark code (DESIGN.md's layer rule)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "app" / "engine"
# orjson: a pure codec (no I/O) for snapshots; see app/engine/journal.py.
ALLOWED_THIRD_PARTY = {"sortedcontainers", "orjson"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_engine_imports_only_stdlib_its_two_libraries_and_itself() -> None:
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if name.startswith("app.engine") or top == "__future__":
                continue
            if top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY:
                continue
            offenders.append(f"{path.relative_to(ENGINE.parent.parent)} imports {name}")
    assert not offenders, offenders


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import fastapi\nfrom sqlalchemy import select\n")
    assert _imports(bad) == {"fastapi", "sqlalchemy"}
