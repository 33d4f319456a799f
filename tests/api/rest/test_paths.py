"""Which route serves a path (app/api/rest/paths.py): as Starlette picks it, for everyone.

The compiled fast path, the /v1 fallback's ``Allow`` and the Idempotency-Key layer's anchor
all ask ``RouteTable``; these tests hold its indexed answer to Starlette's own walk over the
routes in order, on the service's app.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from fastapi import APIRouter, Depends, FastAPI
from starlette.routing import BaseRoute, Match, Route

from app.api.idempotency import _anchor
from app.api.rest.compiled import FastRoutes
from app.api.rest.fallback import unrouted
from app.api.rest.paths import RouteTable, in_order, table_of
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

APP = create_app(Settings(), store=Store())

REQUESTS = [
    ("POST", "/v1/streams/s/entries"),
    ("GET", "/v1/streams/s/entries"),
    ("GET", "/v1/streams/s/entries/1-1"),
    ("DELETE", "/v1/streams/s"),
    ("GET", "/v1/streams"),
    ("PATCH", "/v1/streams/s"),  # a method no route of the path takes
    ("GET", "/v1/streams/s/groups/g/consumers"),
    ("POST", "/v1/streams/s/groups/g/acks"),
    ("GET", "/v1/streams/s/events"),
    ("GET", "/v1/whoami"),
    ("GET", "/v1/nothing/here"),
    ("GET", "/v1"),
    ("POST", "/"),
    ("PUT", "/"),
    ("POST", "/pipeline"),
    ("GET", "/xadd/k/*/a/1"),
    ("GET", "/metrics"),
    ("GET", "/ui/index.html"),
    ("GET", "/livez"),
]


def _scope(method: str, path: str, app: FastAPI = APP) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "app": app,
    }


def _starlette(routes: list[BaseRoute], scope: dict[str, Any]) -> tuple[BaseRoute, Any] | None:
    """What Starlette's router does: every route in order, the first full match, else the
    first partial one."""
    partial = None
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return route, child
        if match is Match.PARTIAL and partial is None:
            partial = route, child
    return partial


@pytest.mark.parametrize(("method", "path"), REQUESTS)
def test_the_table_picks_the_route_starlette_picks(method: str, path: str) -> None:
    """The same route as a walk over every route in order, and one inside the route
    Starlette's walk over the app's own routes (included routers whole) reaches."""
    table = table_of(APP.router)
    scope = _scope(method, path)
    served = table.serving(scope)
    assert served == _starlette(list(in_order(APP.router.routes)), scope)
    outer = _starlette([r for r in APP.router.routes if not isinstance(r, FastRoutes)], scope)
    assert (served is None) == (outer is None)
    if served is not None and outer is not None:
        inner = getattr(outer[0], "original_router", None)  # a router included whole
        inside = [outer[0]] if inner is None else list(in_order(inner.routes))
        assert any(served[0] is r for r in inside)
        assert served[0].matches(scope)[0] == outer[0].matches(scope)[0]
    full = table.match(scope)
    if served is not None and served[0].matches(scope)[0] is Match.FULL:
        assert full == served
    else:
        assert full is None


METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def _sample(path: str) -> str:
    """A path the template matches: each parameter filled with a plain segment."""
    return re.sub(r"\{[^}:]+(:[^}]+)?\}", "p1", path)


def _paths() -> list[str]:
    found = {_sample(r.path) for r in in_order(APP.router.routes) if isinstance(r, Route)}
    found |= {"/v1/streams/a/b/c/d/e/f", "/v1/nothing", "/v1/", "/", "/metrics", "/ui/x.js"}
    return sorted(found)


@pytest.mark.parametrize("path", _paths())
def test_the_table_picks_starlettes_route_for_every_route_and_method(path: str) -> None:
    """Every route's own path, each method: a route indexed under the wrong depth, or the
    app's order lost, would show here."""
    table = table_of(APP.router)
    every = list(in_order(APP.router.routes))
    for method in METHODS:
        scope = _scope(method, path)
        assert table.serving(scope) == _starlette(every, scope), (method, path)


def test_the_fast_path_is_not_one_of_the_routes() -> None:
    """``FastRoutes`` answers for other routes: the table asks the routes behind it."""
    assert any(isinstance(r, FastRoutes) for r in APP.router.routes)
    assert not any(isinstance(r, FastRoutes) for r in table_of(APP.router).routes)


def test_the_table_is_kept_until_the_routes_change() -> None:
    app = create_app(Settings(), store=Store())
    first = table_of(app.router)
    assert table_of(app.router) is first
    router = APIRouter()

    @router.get("/v1/added")
    async def added() -> None:
        return None

    app.router.routes.insert(1, router.routes[0])
    again = table_of(app.router)
    assert again is not first
    assert again.match(_scope("GET", "/v1/added", app)) is not None


def test_allowed_names_the_methods_of_a_path_but_the_fallbacks() -> None:
    """The /v1 fallback's ``Allow``: the methods of the routes of that path, not its own."""
    table = table_of(APP.router)
    assert table.allowed("/v1/streams/s", skip=unrouted) == ["DELETE", "GET"]
    assert table.allowed("/v1/streams/s/entries", skip=unrouted) == ["DELETE", "GET", "POST"]
    assert table.allowed("/v1/nothing/here", skip=unrouted) == []
    assert table.allowed("/v1/streams/s/groups/g/nothing", skip=unrouted) == []
    assert "PATCH" in table.allowed("/v1/streams/s")  # the fallback's own methods


def _never() -> None:
    return None


def test_an_inclusion_that_adds_something_is_kept_whole() -> None:
    """A router included with a prefix, dependencies or a body limit of its own is one route:
    its routes alone would answer without what the inclusion adds."""
    inner = APIRouter()

    @inner.get("/v1/x")
    async def x() -> None:
        return None

    for options in (
        {},
        {"prefix": "/p"},
        {"dependencies": [Depends(_never)]},
        {"max_body_size": 9},
    ):
        app = FastAPI()
        app.include_router(inner, **options)
        (route,) = RouteTable(app.router.routes).routes[-1:]
        seen_through = route is inner.routes[0]
        assert seen_through == (options == {}), options
        assert list(in_order(app.router.routes))[-1] is route


@pytest.mark.parametrize(
    ("method", "path", "body", "anchor"),
    [
        ("POST", "/v1/streams/s/entries", b"{}", "s"),
        ("DELETE", "/v1/streams/s/nothing", b"", None),  # no route serves it: no key named
        ("POST", "/v1/streams/s/groups/g/acks", b"{}", "s"),
        ("POST", "/v1/webhooks", b"{}", None),
        ("POST", "/", orjson.dumps(["XADD", "k", "*", "a", "1"]), "k"),
        ("POST", "/pipeline", orjson.dumps([["XADD", "p", "*", "a", "1"]]), "p"),
        ("POST", "/xadd/q/*/a/1", b"", "q"),
    ],
)
def test_the_idempotency_anchor_is_the_key_of_the_route_that_serves(
    method: str, path: str, body: bytes, anchor: str | None
) -> None:
    assert _anchor(_scope(method, path), body) == anchor
