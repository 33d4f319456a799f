"""What a request handler or middleware may use, as one typed object reached through a dependency.

``create_app`` builds one ``Services`` and keeps it on ``app.state.services``, the only thing
the app keeps there; handlers take ``ServicesDep`` (or ``BackendDep``), and code that holds
the app or a request calls ``app_services`` or ``services_of``, so what a surface depends on
is written in its signature and checked by mypy. What only start and stop use (the store,
storage and key database they open and close) is not here: it is ``app.lifespan.Runtime``,
which the lifespan holds itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.applications import Starlette

from app.access import Authenticator
from app.api.holds import Holds
from app.backends import Backend
from app.delivery import WebhookRunner
from app.durability import Readiness
from app.observe import Metrics
from app.settings import Settings

if TYPE_CHECKING:  # the SSE modules import this one
    from app.api.sse.registry import SseRegistry
    from app.api.sse.tail import Tails


@dataclass(slots=True)
class Services:
    settings: Settings
    backend: Backend
    readiness: Readiness
    metrics: Metrics
    # Requests each credential holds open (event streams, long polls, blocking reads).
    holds: Holds
    # Who may do what (app/access): the gate resolves credentials with it, and the lifespan
    # fills its key ring.
    access: Authenticator
    # The open event streams (capped; ended when their key goes or the server stops) and the
    # stream tails they share.
    sse: SseRegistry
    sse_tails: Tails
    # The webhook loops of this process (app/delivery): the lifespan runs them, REST tells
    # them when a webhook changed here.
    webhooks: WebhookRunner


def app_services(app: Starlette) -> Services:
    services: Services = app.state.services
    return services


def services_of(request: Request) -> Services:
    return app_services(request.app)


# ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread.
async def get_services(request: Request) -> Services:
    return services_of(request)


async def get_backend(request: Request) -> Backend:
    return services_of(request).backend


ServicesDep = Annotated[Services, Depends(get_services)]
BackendDep = Annotated[Backend, Depends(get_backend)]
