"""The shared timer of heartbeats and send watchdogs: each stream in its own phase, in order."""

from __future__ import annotations

import asyncio

from app.api.sse.flush import Flusher
from app.api.sse.ticker import Ticker
from tests.support.waiting import until_async

PERIOD_S = 0.01


async def test_each_callback_runs_a_period_after_it_was_added_until_it_says_stop() -> None:
    ticker = Ticker(PERIOD_S)
    loop = asyncio.get_running_loop()
    runs: dict[str, list[float]] = {"a": [], "b": []}
    added: dict[str, float] = {}

    def make(name: str, times: int) -> None:
        def fn() -> bool:
            runs[name].append(loop.time())
            return len(runs[name]) < times

        added[name] = loop.time()
        ticker.add(fn)

    make("a", 3)
    await asyncio.sleep(PERIOD_S / 2)  # b's phase is half a period after a's
    make("b", 2)
    await until_async(lambda: len(runs["a"]) == 3 and len(runs["b"]) == 2)
    await asyncio.sleep(3 * PERIOD_S)  # time itself is what is tested: nothing more runs
    assert [len(runs["a"]), len(runs["b"])] == [3, 2]
    for name, times in runs.items():
        # Never before its period: a period after it was added, then after its last run.
        starts = [added[name], *times[:-1]]
        assert all(t - s >= PERIOD_S * 0.99 for s, t in zip(starts, times, strict=True))


async def test_a_cancelled_callback_never_runs_and_lets_go_of_its_callback() -> None:
    ticker = Ticker(PERIOD_S)
    ran: list[str] = []
    gone = ticker.add(lambda: bool(ran.append("gone")))
    ticker.add(lambda: bool(ran.append("kept")))
    gone.cancel()
    assert gone.fn is None
    await until_async(lambda: "kept" in ran)
    assert ran == ["kept"]


async def test_a_ticker_follows_a_new_loop() -> None:
    """An app served by one loop after another (tests do that) keeps its heartbeats."""
    ticker = Ticker(PERIOD_S)
    ran: list[int] = []

    def on_other_loop() -> None:
        async def add() -> None:
            ticker.add(lambda: bool(ran.append(1)))

        asyncio.run(add())  # closed at once: what it queued never runs

    await asyncio.to_thread(on_other_loop)
    ticker.add(lambda: bool(ran.append(2)))
    await until_async(lambda: 2 in ran)
    assert ran == [2]


def test_a_round_frames_a_shared_event_once() -> None:
    flusher = Flusher()
    event = b"id: 1-0\nevent: entry\ndata: {}\n\n"
    chunk = flusher.chunk(event)
    assert chunk == b"%x\r\n%s\r\n" % (len(event), event)
    assert flusher.chunk(event) is chunk
    assert flusher.chunk(b"other") == b"5\r\nother\r\n"
