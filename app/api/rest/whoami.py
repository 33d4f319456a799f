"""The caller's own grant (``GET /v1/whoami``, as Redis's ACL WHOAMI): what a client shows or
hides before it tries, so a dashboard disables what its key may not do."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request

from app.api.access_gate import principal_of
from app.api.rates import parsed, rate_of
from app.api.rest.common import errors, router
from app.api.rest.schemas.access import Whoami, whoami
from app.api.services import ServicesDep
from app.engine.limits import Limits

api = router("/v1/whoami", "access")


@api.get(
    "",
    operation_id="whoami",
    summary="Who am I, and what may I do",
    response_model=Whoami,
    responses=errors(),
)
async def get_whoami(
    request: Request,
    services: ServicesDep,
    stream: Annotated[
        list[str],
        Query(description="A stream to say what the caller may do on; repeat it."),
    ] = [],  # noqa: B006 (FastAPI copies defaults; a list one documents an array)
) -> Whoami:
    """The credential's principal and grant (ACL WHOAMI), and for each `stream` asked about
    whether the caller may read, consume and write it: what the permission check will decide
    (docs/operations/access.md). Any valid credential may ask; none at all is a 401 unless
    the service is open."""
    names = list(dict.fromkeys(stream))
    # As many as one XREAD may name (max_read_keys), refused with the engine's words.
    Limits(read_keys=services.settings.max_read_keys).check_read_keys("whoami", len(names))
    principal = principal_of(request.scope)
    settings = services.settings
    rate = rate_of(principal, parsed(settings.rate_requests), parsed(settings.rate_requests_admin))
    return whoami(principal, names, None if rate is None else str(rate))
