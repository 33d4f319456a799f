"""The /v1 paths no route serves: 404 or 405 as problem details, not the command endpoint.

The command endpoint's catch-all (``GET|POST /{path}``) would otherwise read
``GET /v1/nothing`` as a Redis command named ``v1``. This router goes after every /v1 router
and before the command endpoint's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import APIRouter, Request
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Route

router = APIRouter(include_in_schema=False)

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


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


def _allowed(routes: Iterable[Any], path: str) -> list[str]:
    methods: set[str] = set()
    for route in leaves(routes):
        if (
            route.path.startswith("/v1/")
            and route.endpoint is not unrouted
            and route.methods
            and route.path_regex.match(path)
        ):
            methods |= route.methods
    return sorted(methods - {"HEAD"})


@router.api_route("/v1", methods=_METHODS)
@router.api_route("/v1/{rest:path}", methods=_METHODS)
async def unrouted(request: Request) -> None:
    """405 with ``Allow`` when the path exists with other methods, else 404."""
    allowed = _allowed(request.app.router.routes, request.url.path)
    if allowed:
        raise HTTPException(405, headers={"Allow": ", ".join(allowed)})
    raise HTTPException(404)
