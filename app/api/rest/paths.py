"""Which route serves a path: decided in one place, the way Starlette decides it.

Starlette tries an app's routes in order and takes the first that matches the path and the
method; when none does, the first that matches the path alone answers (405). The compiled
fast path (app/api/rest/compiled.py) asks which route serves a request, the /v1 fallback
which methods a path takes (its ``Allow``), and the Idempotency-Key layer which stream a
request names (app/api/idempotency.py): all three ask this module, so they cannot disagree.

FastAPI 0.16x keeps an included router as one route, so the routes are flattened first
(``in_order``); a router whose inclusion changes how its routes answer (a prefix, its own
dependencies or body limit) is kept whole, so nothing looks past what it adds. A
``RouteTable`` indexes the routes by the number of ``/`` in their path, once, so a request
asks only the routes that can match it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from starlette.convertors import StringConvertor
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Scope

__all__ = ["RouteTable", "Shortcut", "in_order", "leaves", "table_of"]


class Shortcut(BaseRoute):
    """A route that answers for others (the compiled fast path): which route serves a path is
    asked of the routes behind it, so the table leaves it out."""


def in_order(routes: Iterable[Any]) -> Iterator[BaseRoute]:
    """Every route in the order a request tries them, looking inside included routers whose
    inclusion adds nothing to how their routes answer."""
    for route in routes:
        if isinstance(route, Shortcut):
            continue
        inner = getattr(route, "original_router", None)
        if inner is not None and _plain(getattr(route, "include_context", None)):
            yield from in_order(inner.routes)
        else:
            yield route


def _plain(context: Any) -> bool:
    """Whether an inclusion leaves its routes as they are: no prefix (their paths would lack
    it), no dependencies and no body limit of its own (their answers would lack them)."""
    return not (
        getattr(context, "prefix", "")
        or getattr(context, "dependencies", None)
        or getattr(context, "max_body_size", None) is not None
    )


def leaves(routes: Iterable[Any]) -> Iterator[Route]:
    """Every path route, looking inside included routers."""
    return (r for r in in_order(routes) if isinstance(r, Route))


class RouteTable:
    """An app's routes in request order, indexed by path depth."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self.routes = list(in_order(routes))
        anywhere: list[tuple[int, BaseRoute]] = []  # routes of no fixed depth, by position
        fixed: list[tuple[int, int, BaseRoute]] = []
        for position, route in enumerate(self.routes):
            depth = _depth(route)
            if depth is None:
                anywhere.append((position, route))
            else:
                fixed.append((position, depth, route))
        self._by_depth: dict[int, list[BaseRoute]] = {}
        for depth in {d for _, d, _ in fixed}:
            rows = [(p, r) for p, d, r in fixed if d == depth] + anywhere
            self._by_depth[depth] = [r for _, r in sorted(rows, key=lambda x: x[0])]
        self._anywhere = [r for _, r in anywhere]

    def candidates(self, path: str) -> list[BaseRoute]:
        """The routes that can match ``path``, in the order a request tries them."""
        return self._by_depth.get(path.count("/"), self._anywhere)

    def match(self, scope: Scope) -> tuple[BaseRoute, Scope] | None:
        """The route that takes ``scope``, path and method, and the scope it adds; None when
        none does."""
        for route in self.candidates(scope["path"]):
            match, child = route.matches(scope)
            if match is Match.FULL:
                return route, child
        return None

    def serving(self, scope: Scope) -> tuple[BaseRoute, Scope] | None:
        """The route that answers ``scope`` as Starlette picks it: the first full match, else
        the first that matches the path alone (it answers 405); None when no route does."""
        partial: tuple[BaseRoute, Scope] | None = None
        for route in self.candidates(scope["path"]):
            match, child = route.matches(scope)
            if match is Match.FULL:
                return route, child
            if match is Match.PARTIAL and partial is None:
                partial = route, child
        return partial

    def allowed(self, path: str, *, skip: Any = None) -> list[str]:
        """The methods the /v1 routes matching ``path`` take (HEAD left out), but the
        endpoint ``skip`` (the fallback's own catch-all)."""
        methods: set[str] = set()
        for route in self.candidates(path):
            if (
                isinstance(route, Route)
                and route.path.startswith("/v1/")
                and route.endpoint is not skip
                and route.methods
                and route.path_regex.match(path)
            ):
                methods |= route.methods
        return sorted(methods - {"HEAD"})


_KEPT = "xstreams_route_table"


def table_of(router: Router) -> RouteTable:
    """The table of an app's router, kept on it and built again only when its routes changed
    (tests add routes to a built app). Kept on the router, not here, so it goes with it."""
    ids = tuple(map(id, router.routes))
    kept: tuple[tuple[int, ...], RouteTable] | None = getattr(router, _KEPT, None)
    if kept is not None and kept[0] == ids:
        return kept[1]
    table = RouteTable(router.routes)
    setattr(router, _KEPT, (ids, table))
    return table


def _depth(route: BaseRoute) -> int | None:
    """How many ``/`` a path this route matches holds, when that is fixed: every parameter
    a plain one (one segment); None for a mount or a parameter that spans segments."""
    if not isinstance(route, Route):
        return None
    if not all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
        return None
    return route.path.count("/")
