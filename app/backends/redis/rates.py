"""Credentials' request rates in front of Redis: one script a request, on Redis's clock, so
every front-end in front of one Redis spends the same budget (a limit is the sum over
workers and hosts, not per process).

The arrival time of a credential is a string key ``xs:rate:<limit key>`` that expires once
it lies in the past, so an idle credential leaves nothing behind.
"""

from __future__ import annotations

from app.access.rates import Decision, Mode, Rate
from app.backends.redis import lua
from app.backends.redis.routing import Router
from app.backends.redis.scripts import eval_line

__all__ = ["RATE_PREFIX", "Rates"]

RATE = lua.script("rate")  # lua/rate.lua
RATE_PREFIX = "xs:rate:"


class Rates:
    """``spend_rate`` of the Backend. A part of ``RedisBackend``, which sets ``_router``."""

    _router: Router

    async def spend_rate(
        self,
        key: str,
        rate: Rate,
        cost: int = 1,
        mode: Mode = Mode.TAKE,
        now_us: int | None = None,
    ) -> Decision:
        args: list[int] = [rate.cost_us(cost), rate.tolerance_us, int(mode)]
        if now_us is not None:
            args.append(now_us)
        name = RATE_PREFIX + key
        raw = await self._router.call_plain(name, *eval_line(RATE, [name], args))
        allowed, ahead_us, wait_us = (int(x) for x in raw)
        return Decision.of(rate, bool(allowed), ahead_us, wait_us)
