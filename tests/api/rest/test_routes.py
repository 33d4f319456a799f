"""Every /v1 handler runs on the event loop (``async def``), never in a worker thread.

FastAPI runs a plain ``def`` handler in a thread pool: an engine call there would race the
loop that owns the keyspace and wake waiters' futures from the wrong thread.
"""

from __future__ import annotations

import inspect

from app.api.rest.paths import leaves
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings


def test_every_v1_handler_is_a_coroutine_function() -> None:
    app = create_app(Settings(), store=Store())
    handlers = [r for r in leaves(app.router.routes) if r.path.startswith("/v1")]
    assert len(handlers) >= 24
    sync = [r.path for r in handlers if not inspect.iscoroutinefunction(r.endpoint)]
    assert not sync, sync
