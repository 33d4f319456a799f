"""``GET /metrics``: the service's figures in Prometheus's text format (``app.observe``).

Behind the access rules like everything but the probes: the admin, or a credential granted
``metrics`` (an API key made with ``xstreams keys create --metrics``, a JWT whose claim says
``"metrics": true``), which reads no stream. Others get 403 with Redis's NOPERM text, in the
command endpoint's ``{"error"}`` shape (the path is not under ``/v1``). A plain Starlette
route, registered before the command endpoint's path-style catch-all.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.routing import Route

from app.access import NoPerm, Verb
from app.api.access_gate import principal_of
from app.api.errors import json_response
from app.api.services import services_of
from app.observe import CONTENT_TYPE

log = logging.getLogger("xstreams")

__all__ = ["install"]


async def metrics(request: Request) -> Response:
    if not principal_of(request.scope).grant.has(Verb.METRICS):
        text = NoPerm.command("metrics").text
        services_of(request).metrics.error(text)
        return json_response({"error": text}, 403)
    services = services_of(request)
    try:
        delivery = await services.backend.delivery_stats()
    except Exception as e:  # Redis away: the rest of the figures are still worth a scrape
        log.warning("/metrics without the delivery policies' figures: %s", e)
        delivery = None
    # On the event loop, as every tally is kept: the scrape reads a consistent keyspace.
    return Response(services.metrics.exposition(delivery), media_type=CONTENT_TYPE)


def install(app: FastAPI) -> None:
    app.router.routes.append(Route("/metrics", metrics, methods=["GET"]))
