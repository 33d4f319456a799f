"""The /v1 paths no route serves: 404 or 405 as problem details, not the command endpoint.

The command endpoint's catch-all (``GET|POST /{path}``) would otherwise read
``GET /v1/nothing`` as a Redis command named ``v1``. This router goes after every /v1 router
and before the command endpoint's.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.exceptions import HTTPException

from app.api.rest.paths import table_of

router = APIRouter(include_in_schema=False)

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


@router.api_route("/v1", methods=_METHODS)
@router.api_route("/v1/{rest:path}", methods=_METHODS)
async def unrouted(request: Request) -> None:
    """405 with ``Allow`` when the path exists with other methods, else 404."""
    allowed = table_of(request.app.router).allowed(request.url.path, skip=unrouted)
    if allowed:
        raise HTTPException(405, headers={"Allow": ", ".join(allowed)})
    raise HTTPException(404)
