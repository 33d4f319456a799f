"""Which route serves a path: decided in one place, the way Starlette decides it.

Starlette tries an app's routes in order and takes the first that matches the path and the
method; a route that matches the path alone (another method) decides only when none matches
fully. FastAPI 0.16x keeps an included router as one route, so the routes are flattened
first (``in_order``). ``RouteTable`` indexes them by the number of ``/`` in their path, once,
so a request asks only the routes that can match it. The compiled fast path takes its route
from here, and the /v1 fallback the methods of its ``Allow`` header.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from starlette.convertors import StringConvertor
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

__all__ = ["RouteTable", "in_order", "leaves"]


def in_order(routes: Iterable[Any]) -> Iterator[BaseRoute]:
    """Every route in the order a request tries them, looking inside included routers
    (FastAPI 0.16x keeps an included router whole, as one route). A router included under
    a prefix of its own is kept whole: its routes' paths lack the prefix."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None and not getattr(getattr(route, "include_context", None), "prefix", ""):
            yield from in_order(inner.routes)
        else:
            yield route


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
        """The route that serves ``scope`` and the scope it adds: the first that matches path
        and method. None when none does, and a route matching the path alone (a method it
        does not take) decides, as Starlette's routing does (405)."""
        for route in self.candidates(scope["path"]):
            match, child = route.matches(scope)
            if match is Match.FULL:
                return route, child
        return None

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


def _depth(route: BaseRoute) -> int | None:
    """How many ``/`` a path this route matches holds, when that is fixed: every parameter
    a plain one (one segment); None for a mount or a parameter that spans segments."""
    if not isinstance(route, Route):
        return None
    if not all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
        return None
    return route.path.count("/")
