"""Where a webhook's loop sends its health (app/engine/webhook_health.py): to the backend,
one write in flight at a time.

Every attempt is recorded, but not written on its own: the attempts that end while a write
is under way are folded into the next one. So a webhook costs at most one write per attempt,
and far fewer when it is busy (one per round trip to the backend). A write that fails is
logged once and dropped: health is an observation, the next attempt renews it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from app.backends.roles import WebhooksRole
from app.engine.delivery import Webhook
from app.engine.webhook_health import HealthUpdate

__all__ = ["HealthWriter"]

log = logging.getLogger("xstreams")


class HealthWriter:
    """Folds one webhook's attempts into updates and writes them to the backend."""

    def __init__(self, backend: WebhooksRole, hook: Webhook) -> None:
        self.backend, self.hook = backend, hook
        self._pending: HealthUpdate | None = None
        self._task: asyncio.Task[None] | None = None
        self._fault: str | None = None

    def record(self, update: HealthUpdate) -> None:
        """An attempt ended (or a note, such as "not run"): written soon."""
        self._pending = update if self._pending is None else self._pending.then(update)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write(), name=f"health {self.hook.name}")

    async def _write(self) -> None:
        while self._pending is not None:
            update, self._pending = self._pending, None
            try:
                await self.backend.record_webhook_health(self.hook, update)
                self._fault = None
            except Exception as e:
                text = f"cannot store its health: {e or type(e).__name__}"
                if text != self._fault:
                    log.warning("webhook %r: %s", self.hook.name, text)
                self._fault = text

    async def close(self, wait_s: float) -> None:
        """Write what is pending, waiting at most ``wait_s``."""
        task = self._task
        if task is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), wait_s)
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
