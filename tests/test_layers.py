"""The engine imports nothing above it: no web, SQL or Spark code.

These are the layer rules of docs/architecture.md, checked in code."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "app" / "engine"
# orjson: a pure codec (no I/O) for snapshots; see app/engine/json_codec.py.
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


def test_delivery_talks_only_to_the_backend() -> None:
    """app/delivery (retention, webhooks) runs beside requests through the Backend protocol:
    no surface, no storage, no wiring; figures go out through callbacks, not app.observe."""
    forbidden = (
        "app.api", "app.storage", "app.main", "app.cli", "app.observe", "app.engine.store",
        "app.engine.keyspace", "fastapi", "starlette", "sqlalchemy",
    )  # fmt: skip
    assert not _offenders(APP / "delivery", forbidden)


def test_backends_sit_below_the_surfaces() -> None:
    """Surfaces call app.backends; a backend may use the engine (its argument and reply
    types, its rules) but never the surfaces or the wiring above them."""
    assert not _offenders(APP / "backends", ("app.api", "app.main", "app.cli", "fastapi"))


def test_the_engine_never_imports_a_backend() -> None:
    assert not _offenders(ENGINE, ("app.backends", "redis"))


# Surfaces call the Backend protocol (app/backends): they may use the engine's types (argument
# records, replies, IDs, errors) and its pure rules (ID and trim parsing), never the keyspace,
# the store or an operation that runs on them, which only a backend calls. SSE has stricter
# rules of its own (below).
SURFACES_ON_THE_BACKEND = ("api/rest", "api/commands")
SURFACE_MAY_NOT = ("app.engine.store", "app.engine.keyspace", "app.engine.waiting", "app.api.ops")
COMMANDS = ENGINE / "commands"


def _operations(family: Path) -> set[str]:
    """The engine operations a command module defines: functions of the keyspace
    (``def xadd(ks: Keyspace, ...)``), as opposed to its types and pure rules."""
    tree = ast.parse(family.read_text(), str(family))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.args.args:
            annotation = node.args.args[0].annotation
            if isinstance(annotation, ast.Name | ast.Constant) and "Keyspace" in ast.unparse(
                annotation
            ):
                found.add(node.name)
    return found


def _surface_offenders(path: Path, root: Path = APP.parent) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(SURFACE_MAY_NOT) or a.name.startswith("app.engine.commands."):
                    found.append(f"{where} imports {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = node.module
            if module.startswith(SURFACE_MAY_NOT):
                found.append(f"{where} imports {module}")
            elif module == "app.engine.commands":  # a whole family: its operations with it
                found += [
                    f"{where} imports {module}.{a.name}"
                    for a in node.names
                    if (COMMANDS / f"{a.name}.py").exists()
                ]
            elif module.startswith("app.engine.commands."):
                family = COMMANDS / f"{module.rsplit('.', 1)[1]}.py"
                operations = _operations(family)
                found += [
                    f"{where} imports the engine operation {module}.{a.name}"
                    for a in node.names
                    if a.name in operations
                ]
    return found


def test_rest_and_commands_call_the_backend_not_the_engine() -> None:
    offenders = []
    for folder in SURFACES_ON_THE_BACKEND:
        for path in sorted((APP / folder).rglob("*.py")):
            offenders += _surface_offenders(path)
    assert not offenders, offenders


def test_the_surface_check_sees_store_keyspace_and_operations(tmp_path: Path) -> None:
    assert {"xadd", "xrange", "parse_xadd"} <= _operations(COMMANDS / "streams.py")
    assert "trim_spec" not in _operations(COMMANDS / "streams.py")  # a pure rule
    bad = tmp_path / "app" / "api" / "rest" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from app.engine.store import Store\n"
        "from app.engine.commands import groups as ops\n"
        "from app.engine.commands.streams import XAddArgs, xadd\n"
    )
    found = [line.split(" ", 1)[1] for line in _surface_offenders(bad, tmp_path)]
    assert found == [
        "imports app.engine.store",
        "imports app.engine.commands.groups",
        "imports the engine operation app.engine.commands.streams.xadd",
    ]


# SSE runs in front of any backend (issue 14): it reaches streams through the Backend protocol
# (app.api.services), never the engine's state or its command functions. From the engine it may
# take IDs, errors, reply and entry types, and request types (``ReadRequest``, ``RangeArgs``).
SSE_MAY_NOT = (
    "app.engine.store", "app.engine.keyspace", "app.engine.waiting", "app.engine.blocking",
    "app.engine.consumer_groups", "app.engine.pel", "app.engine.node", "app.backends.embedded",
    "app.api.deps", "app.api.ops", "app.storage", "app.main",
)  # fmt: skip
ENGINE_STATE = {"store", "keyspace"}  # what app.state and the embedded backend would lead to


def _sse_offenders(path: Path) -> list[str]:
    """Forbidden modules, anything but types from app.engine.commands, and reaching for a
    store or keyspace by attribute (``request.app.state.store``, ``backend.store``)."""
    tree = ast.parse(path.read_text(), str(path))
    found = [f"imports {name}" for name in _imports(path) if name.startswith(SSE_MAY_NOT)]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "app.engine.commands"
        ):
            found += [
                f"imports {a.name} from {node.module}"
                for a in node.names
                if not a.name[:1].isupper()  # types are CamelCase; functions are not
            ]
        elif isinstance(node, ast.Attribute) and node.attr in ENGINE_STATE:
            found.append(f"reads .{node.attr} (line {node.lineno})")
    return found


def test_sse_uses_only_the_backend() -> None:
    offenders = [
        f"{path.relative_to(APP.parent)} {what}"
        for path in sorted((APP / "api" / "sse").rglob("*.py"))
        for what in _sse_offenders(path)
    ]
    assert not offenders, offenders


def test_the_sse_check_sees_engine_access(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from app.engine.commands.reads import ReadRequest, xread\n"
        "from app.engine.store import Store\n"
        "def f(request):\n"
        "    return request.app.state.store.keyspace\n"
    )
    assert sorted(_sse_offenders(bad)) == [
        "imports app.engine.store",
        "imports xread from app.engine.commands.reads",
        "reads .keyspace (line 4)",
        "reads .store (line 4)",
    ]


# The request protocol's durability (writable before a write, visible only once durable, errors
# included) lives behind the Backend (docs/architecture.md, "The request protocol"): a surface
# imports nothing from storage, from app.durability only whether the service is ready, and
# never calls the two halves of the protocol itself.
DURABILITY_NAMES_A_SURFACE_MAY_USE = {"Readiness", "ReadyState"}
PROTOCOL_CALLS = {"check_writable", "wait_visible"}


def _durability_offenders(path: Path, root: Path = APP.parent) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                f"{where} imports {a.name}"
                for a in node.names
                if a.name.startswith(("app.storage", "app.durability"))
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("app.storage"):
                found.append(f"{where} imports {node.module}")
            elif node.module == "app.durability":
                found += [
                    f"{where} imports {a.name} from app.durability"
                    for a in node.names
                    if a.name not in DURABILITY_NAMES_A_SURFACE_MAY_USE
                ]
        elif isinstance(node, ast.Attribute) and node.attr in PROTOCOL_CALLS:
            found.append(f"{where} calls .{node.attr} (line {node.lineno})")
    return found


def test_surfaces_leave_durability_to_the_backend() -> None:
    offenders = [
        what for path in sorted((APP / "api").rglob("*.py")) for what in _durability_offenders(path)
    ]
    assert not offenders, offenders


def test_the_durability_check_sees_storage_and_the_protocol(tmp_path: Path) -> None:
    bad = tmp_path / "app" / "api" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from app.durability import Readiness, StorageUnavailable\n"
        "import app.storage.writer\n"
        "async def f(services, keys):\n"
        "    services.storage.check_writable()\n"
        "    await services.storage.wait_visible(keys)\n"
    )
    found = [line.split(" ", 1)[1] for line in _durability_offenders(bad, tmp_path)]
    assert found == [
        "imports StorageUnavailable from app.durability",
        "imports app.storage.writer",
        "calls .check_writable (line 4)",
        "calls .wait_visible (line 5)",
    ]


def test_the_client_talks_to_the_service_only_over_http() -> None:
    """app/client is a client like any other: it imports nothing of app but itself (and the
    version), so it never drags the server (FastAPI, the engine, storage) into a script."""
    offenders = [
        f"{path.relative_to(APP.parent)} imports {name}"
        for path in sorted((APP / "client").rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] in ("app", "fastapi", "starlette", "sqlalchemy", "uvicorn")
        and not name.startswith("app.client")
        and name != "app"  # from app import __version__
    ]
    assert not offenders, offenders


def _module_imports(root: Path) -> dict[str, set[str]]:
    """Every module of the ``app`` package under ``root``, with the modules of it that it
    imports: anywhere in the file (under ``TYPE_CHECKING`` and inside functions too, since a
    circle a type or a late import closes is still a circle), ``from a import b`` naming the
    module ``a.b`` when there is one."""
    modules: dict[str, Path] = {}
    for path in (root / "app").rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_app_has_no_import_circles() -> None:
    """Modules that import each other can only be read, tested and moved together, and one of
    them meets the other half-initialised at import. Shared types go to a module both sides
    import (app/api/sse/registry.py), or a Protocol says what one side needs of the other
    (``Dirty`` in app/api/sse/flush.py)."""
    assert _circles(_module_imports(APP.parent)) == []


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    (tmp_path / "app" / "api").mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "api" / "__init__.py").write_text("")
    (tmp_path / "app" / "api" / "a.py").write_text("from app.api import b\n")
    (tmp_path / "app" / "api" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    (tmp_path / "app" / "api" / "c.py").write_text("def f():\n    from app.api.a import x\n")
    (tmp_path / "app" / "api" / "d.py").write_text("import app.api.a\n")
    assert _circles(_module_imports(tmp_path)) == [["app.api.a", "app.api.b", "app.api.c"]]
