"""The command endpoint (app/api/commands/routes.py) in front of a backend that is down."""

from __future__ import annotations

from typing import cast

import httpx

from app.api.services import app_services
from app.backends.base import Backend
from app.backends.errors import RedisUnavailable
from app.main import create_app
from app.settings import Settings
from tests.support.fakes import FailingCommands


async def test_a_backend_that_is_down_answers_503_with_its_reason() -> None:
    fake = FailingCommands(error=RedisUnavailable("connection refused"))
    app = create_app(Settings(), backend=cast(Backend, fake))
    app_services(app).readiness.set_ready()  # what the lifespan does once Redis answered
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        r = await client.post("/", json=["XLEN", "s"])
        p = await client.post("/pipeline", json=[["XLEN", "s"], ["XLEN", "t"]])
    assert fake.argv[0] == ["XLEN", "s"]
    for answer in (r, p):
        assert answer.status_code == 503, answer.text
        assert "unavailable" in answer.json()["error"]
        assert "connection refused" in answer.json()["error"]
        assert "retry-after" in answer.headers
