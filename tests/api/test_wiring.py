"""What ``create_app`` leaves on the app: the typed ``Services``, and nothing else beside it."""

from __future__ import annotations

from pathlib import Path

import httpx

from app.api.services import Services, app_services
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings


async def test_the_app_state_holds_only_the_services(tmp_path: Path) -> None:
    """Handlers reach what they use through ``Services``; start and stop keep their own parts
    (``app.lifespan.Runtime``), so nothing else is left on ``app.state``, before start or
    after it, durable or in memory."""
    for app in (create_app(Settings(data_dir=tmp_path)), create_app(Settings(), store=Store())):
        assert set(app.state._state) == {"services"}
        assert isinstance(app_services(app), Services)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://x") as client,
        ):
            assert (await client.post("/", json=["XADD", "s", "*", "f", "v"])).status_code == 200
            assert (await client.get("/readyz")).json()["status"] == "ready"
            assert set(app.state._state) == {"services"}
