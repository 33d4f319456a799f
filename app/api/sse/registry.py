"""The open event streams of one app, kept apart from how one stream is served.

``Services`` holds the registry and the stream machinery (``EventStream``, ``DetachedStream``)
reads the services, so the registry has its own module: both import it, it imports neither.
"""

from __future__ import annotations

from app.access import Principal
from app.api.holds import Holds
from app.api.sse.flush import Flusher
from app.api.sse.outbox import CloseReason, Outbox
from app.api.sse.ticker import Ticker

__all__ = ["SseRegistry"]


class SseRegistry:
    """The open event streams of one app: the connection caps (all, and per credential, so
    one client cannot take them all: ``Holds``, shared with long polls and blocking reads),
    closing a revoked key's streams, closing all on shutdown."""

    def __init__(self, max_connections: int, holds: Holds) -> None:
        self.max_connections = max_connections
        self.holds = holds
        self.flusher = Flusher()
        self.open: set[Outbox] = set()
        self.by_key: dict[str, set[Outbox]] = {}
        self.shutting_down = False
        self.closed: dict[str, int] = {}  # streams ended, by reason (for /metrics)
        self._tickers: dict[float, Ticker] = {}

    def ticker(self, period_s: float) -> Ticker:
        """The one timer that runs every stream's callbacks of this period (heartbeats, the
        send watchdog): no timer per connection."""
        ticker = self._tickers.get(period_s)
        if ticker is None:
            ticker = self._tickers[period_s] = Ticker(period_s)
        return ticker

    def admit(self, outbox: Outbox, principal: Principal) -> tuple[int, str] | None:
        """None when admitted, else the refusal's status and text."""
        if self.shutting_down:
            return 503, "ERR the server is shutting down"
        if len(self.open) >= self.max_connections:
            return 429, f"ERR too many event streams (at most {self.max_connections} open)"
        refusal = self.holds.take(principal)
        if refusal is not None:
            return 429, refusal.text
        self.by_key.setdefault(principal.limit_key, set()).add(outbox)
        self.open.add(outbox)
        return None

    def release(self, outbox: Outbox, principal: Principal) -> None:
        self.holds.give_back(principal)
        self.open.discard(outbox)
        reason = (outbox.reason or CloseReason.ENDED).value
        self.closed[reason] = self.closed.get(reason, 0) + 1
        mine = self.by_key.get(principal.limit_key)
        if mine is not None:
            mine.discard(outbox)
            if not mine:
                del self.by_key[principal.limit_key]

    def close_keys(self, key_ids: set[str]) -> None:
        """End the streams of API keys that were revoked, deleted or expired."""
        for key_id in key_ids:
            for outbox in list(self.by_key.get(key_id, ())):
                outbox.close(CloseReason.REVOKED)

    def close_all(self) -> None:
        """End every stream (server shutdown); streams asked for later are refused."""
        self.shutting_down = True
        for outbox in list(self.open):
            outbox.close(CloseReason.SHUTDOWN)
