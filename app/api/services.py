"""What a request handler may use, as one typed object reached through a dependency.

``create_app`` builds one ``Services`` and keeps it on ``app.state.services``; handlers take
``ServicesDep`` (or ``BackendDep``) instead of looking attributes up on ``app.state``, so what
a surface depends on is written in its signature and checked by mypy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from app.api.holds import Holds
from app.backends import Backend
from app.durability import Readiness
from app.observe import Metrics
from app.settings import Settings


@dataclass(slots=True)
class Services:
    settings: Settings
    backend: Backend
    readiness: Readiness
    metrics: Metrics
    # Requests each credential holds open (event streams, long polls, blocking reads).
    holds: Holds


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


# ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread.
async def get_services(request: Request) -> Services:
    return services_of(request)


async def get_backend(request: Request) -> Backend:
    return services_of(request).backend


ServicesDep = Annotated[Services, Depends(get_services)]
BackendDep = Annotated[Backend, Depends(get_backend)]
