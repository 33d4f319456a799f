"""The caller's own grant (``GET /v1/whoami``, as Redis's ACL WHOAMI): what a client shows or
hides before it tries, so a dashboard disables what its key may not do; and its limits with
what is left of them. The admin may see every API key's (``GET /v1/whoami/keys``), as the
dashboard's usage panel does."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request

from app.access.rates import Policy, Rate
from app.api.access_gate import principal_of
from app.api.rates import RateDefaults, usage
from app.api.rest.common import errors, router
from app.api.rest.schemas.access import KeyUsage, KeyUsageList, LimitUsage, Whoami, whoami
from app.api.services import Services, ServicesDep
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
    (docs/operations/access.md). `limits`: each rate it is held to and what is left of it
    now (this request's own included). Any valid credential may ask; none at all is a 401
    unless the service is open."""
    names = list(dict.fromkeys(stream))
    # As many as one XREAD may name (max_read_keys), refused with the engine's words.
    Limits(read_keys=services.settings.max_read_keys).check_read_keys("whoami", len(names))
    principal = principal_of(request.scope)
    held_to = RateDefaults.of(services.settings).rates_of(principal)
    rate = held_to.get(Policy.REQUESTS)
    limits = await _usage(services, principal.limit_key, held_to)
    return whoami(principal, names, None if rate is None else str(rate), limits)


@api.get(
    "/keys",
    operation_id="list_key_usage",
    summary="Every API key's limits and usage",
    response_model=KeyUsageList,
    responses=errors(),
)
async def list_key_usage(services: ServicesDep) -> KeyUsageList:
    """Each API key held to a limit (its own or the service's defaults), with what is left
    of each budget now. Needs `admin`."""
    defaults = RateDefaults.of(services.settings)
    out = []
    for record in services.access.keys.records():
        held_to = defaults.rates_for(record.limits, scoped=True)
        if held_to:
            limits = await _usage(services, record.key_id, held_to)
            out.append(
                KeyUsage(name=record.name, expires_at_ms=record.expires_at_ms, limits=limits)
            )
    return KeyUsageList(keys=out)


async def _usage(
    services: Services, limit_key: str, held_to: dict[Policy, Rate]
) -> list[LimitUsage]:
    told = await usage(services.backend, limit_key, held_to)
    return [
        LimitUsage(policy=p, rate=str(r), remaining=d.remaining, reset_ms=d.reset_ms)
        for p, r, d in told
    ]
