"""The engine imports nothing above it: no web, SQL or Spark code (DESIGN.md's layer rule)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "app" / "engine"
# orjson: a pure codec (no I/O) for snapshots; see app/engine/codec.py.
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


APP = ENGINE.parent
# The pipeline reaches the service over HTTP only (a Spark executor has nothing else); it may use
# the engine's pure ID rules, never the API, storage or settings of a running server.
PIPELINE_MAY_NOT = ("app.api", "app.storage", "app.main", "app.settings", "app.durability")


def _offenders(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for name in _imports(path):
            if name.startswith(forbidden) or name.split(".")[0] in forbidden:
                found.append(f"{path.relative_to(APP.parent)} imports {name}")
    return found


def test_the_pipeline_talks_to_the_service_only_over_http() -> None:
    assert not _offenders(APP / "pipeline", PIPELINE_MAY_NOT)


def test_nothing_outside_the_pipeline_needs_spark() -> None:
    """PySpark is an optional extra: the server and the rest of the CLI start without it."""
    offenders = []
    for folder in ("engine", "api", "storage", "cli"):
        offenders += _offenders(APP / folder, ("pyspark", "pyarrow"))
    # The CLI may import the pipeline only inside its commands, not at module level.
    for path in sorted((APP / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            module = node.module if isinstance(node, ast.ImportFrom) else None
            # report_model is plain Python (option types); everything else may need Spark.
            if module and module.startswith("app.pipeline") and not module.endswith("_model"):
                offenders.append(f"{path.name} imports {module} at module level")
    assert not offenders, offenders


# Access decides from the engine's command table and nothing else: no HTTP, no SQL, so the
# same check serves every surface and every backend.
ACCESS_MAY_NOT = (
    "app.api", "app.storage", "app.main", "app.settings", "app.durability", "app.pipeline",
    "fastapi", "starlette", "sqlalchemy",
)  # fmt: skip


def test_access_is_pure() -> None:
    assert not _offenders(APP / "access", ACCESS_MAY_NOT)


def test_observe_knows_neither_the_api_nor_storage() -> None:
    """Both report to app.observe (metrics, request IDs); it cannot depend on either."""
    forbidden = ("app.api", "app.storage", "app.main", "app.cli", "app.settings")
    assert not _offenders(APP / "observe", forbidden)


def test_backends_sit_below_the_surfaces() -> None:
    """Surfaces call app.backends; a backend may use the engine (its argument and reply
    types, its rules) but never the surfaces or the wiring above them."""
    assert not _offenders(APP / "backends", ("app.api", "app.main", "app.cli", "fastapi"))


def test_the_engine_never_imports_a_backend() -> None:
    assert not _offenders(ENGINE, ("app.backends", "redis"))
