"""The app uses its libraries through their public API (docs/architecture.md).

A library's private attribute (Starlette's ``Request._body``, ``_json``, ``_query_params``) is a
cache it may rename in any release. Writing one from outside keeps working until that release,
then silently stops. So no module in app/ assigns an underscored attribute of an object other
than ``self`` or ``cls``: a subclass overriding the public method does the same job
(app/api/rest/request). The one subclass of a server's internals, uvicorn's protocol, is pinned
and checked apart (tests/cli/test_uvicorn_contract.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"


def _private_writes(tree: ast.AST) -> list[tuple[int, str]]:
    """Each ``x._name = ...`` (also augmented, annotated, ``del``, ``setattr(x, "_name", ...)``)
    where ``x`` is not ``self`` or ``cls``: the line and the target."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and not _own(node.args[0])
        ):
            found.append((node.lineno, ast.unparse(node)))
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and _private(part.attr) and not _own(part.value):
                    found.append((node.lineno, ast.unparse(part)))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own(value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id in ("self", "cls")


def test_the_rule_sees_a_private_write() -> None:
    """The check finds the writes REST once made to Starlette's request caches."""
    source = (
        "request._query_params = q\n"
        "request._body = b''\n"
        "setattr(request, '_json', {})\n"
        "self._mine = 1\n"
        "cls._kept = 2\n"
        "obj.public = 3\n"
    )
    assert _private_writes(ast.parse(source)) == [
        (1, "request._query_params"),
        (2, "request._body"),
        (3, "setattr(request, '_json', {})"),
    ]


def test_app_writes_no_other_objects_private_attributes() -> None:
    offenders = [
        f"{path.relative_to(APP.parent)}:{line}: {target}"
        for path in sorted(APP.rglob("*.py"))
        for line, target in _private_writes(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == []
