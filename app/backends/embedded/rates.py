"""Credentials' request rates on the embedded engine: one process serves, so its own table
is the shared one. Not journaled: a budget is about the next second, not about the data, and
a restart that forgets it only lets a client start with a whole burst again."""

from __future__ import annotations

import time

from app.access.rates import Decision, Mode, Rate, spend

__all__ = ["RateBook"]

PRUNE_EVERY = 4096  # spends between sweeps of the arrival times already past


class RateBook:
    """Each credential's arrival time (GCRA, app/access/rates.py), on the monotonic clock."""

    def __init__(self) -> None:
        self._tat_us: dict[str, int] = {}
        self._spends = 0

    def spend(
        self,
        key: str,
        rate: Rate,
        cost: int = 1,
        mode: Mode = Mode.TAKE,
        now_us: int | None = None,
    ) -> Decision:
        now = time.monotonic_ns() // 1000 if now_us is None else now_us
        decision, tat = spend(self._tat_us.get(key), now, rate, cost, mode)
        self._tat_us[key] = tat
        self._spends += 1
        if self._spends % PRUNE_EVERY == 0:
            # A time already past says no more than no time: an idle credential leaves nothing.
            self._tat_us = {k: t for k, t in self._tat_us.items() if t > now}
        return decision
