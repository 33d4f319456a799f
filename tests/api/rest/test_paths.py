"""``RouteTable`` (app/api/rest/paths.py) picks the route Starlette's routing picks.

The compiled fast path and the /v1 fallback both ask it which route serves a path; a table
that indexed a route under the wrong depth, or lost the app's order, would send a request to
a route Starlette would not choose.
"""

from __future__ import annotations

import re

import pytest
from starlette.routing import Match, Route

from app.api.rest.fallback import unrouted
from app.api.rest.paths import RouteTable, in_order
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

APP = create_app(Settings(), store=Store())
TABLE = RouteTable(APP.router.routes)
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def _sample(path: str) -> str:
    """A path the template matches: each parameter filled with a plain segment."""
    return re.sub(r"\{[^}:]+(:[^}]+)?\}", "p1", path)


def _paths() -> list[str]:
    found = {_sample(r.path) for r in in_order(APP.router.routes) if isinstance(r, Route)}
    found |= {"/v1/streams/a/b/c/d/e/f", "/v1/nothing", "/v1/", "/", "/metrics", "/ui/x.js"}
    return sorted(found)


def _scope(method: str, path: str) -> dict[str, object]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _starlette(scope: dict[str, object]) -> object | None:
    """Starlette's own choice: the first route, in order, that matches path and method."""
    for route in in_order(APP.router.routes):
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
    return None


@pytest.mark.parametrize("path", _paths())
def test_the_table_picks_starlettes_route(path: str) -> None:
    for method in METHODS:
        scope = _scope(method, path)
        found = TABLE.match(scope)
        assert (None if found is None else found[0]) is _starlette(scope), (method, path)


def test_allowed_names_the_methods_of_a_path_and_only_its() -> None:
    assert TABLE.allowed("/v1/streams/s/entries", skip=unrouted) == ["DELETE", "GET", "POST"]
    assert TABLE.allowed("/v1/streams/s/groups/g/nothing", skip=unrouted) == []
