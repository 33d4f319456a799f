"""Access lines leave once per turn of the event loop, in the order they were logged
(app/observe/logs.py ``LineWriter``): a request's access line costs no write of its own, no
line waits past the turn, and any other line (a warning, a shutdown's, one from another
thread) does not wait at all."""

from __future__ import annotations

import asyncio
import logging
import threading

BATCHED = {"batched": True}  # as the access line marks itself


class Stream:
    """A stream that records each write (one system call each on a real stream)."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> None:
        self.writes.append(text)

    def flush(self) -> None:
        pass


def _logger(stream: Stream) -> logging.Logger:
    from app.observe.logs import LineWriter

    handler = LineWriter(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger(f"test.linewriter.{id(stream)}")
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.INFO)
    return log


async def test_a_turns_lines_go_out_in_one_write_in_order() -> None:
    stream = Stream()
    log = _logger(stream)
    for n in range(3):
        log.info("line %d", n, extra=BATCHED)
    assert stream.writes == []
    await asyncio.sleep(0)
    assert stream.writes == ["line 0\nline 1\nline 2\n"]
    log.info("next", extra=BATCHED)
    await asyncio.sleep(0)
    assert stream.writes[1:] == ["next\n"]


async def test_any_other_line_goes_out_at_once_after_what_waits() -> None:
    stream = Stream()
    log = _logger(stream)
    log.info("first", extra=BATCHED)
    log.info("Application shutdown complete.")
    assert stream.writes == ["first\nApplication shutdown complete.\n"]
    log.info("second", extra=BATCHED)
    log.warning("trouble")
    assert stream.writes[1:] == ["second\ntrouble\n"]
    await asyncio.sleep(0)
    assert len(stream.writes) == 2


async def test_a_line_from_another_thread_does_not_wait_for_the_loop() -> None:
    stream = Stream()
    log = _logger(stream)
    log.info("on the loop", extra=BATCHED)
    thread = threading.Thread(target=log.info, args=("elsewhere",), kwargs={"extra": BATCHED})
    thread.start()
    thread.join()
    assert stream.writes == ["on the loop\nelsewhere\n"]


def test_without_a_loop_every_line_is_written_at_once() -> None:
    stream = Stream()
    log = _logger(stream)
    log.info("a", extra=BATCHED)
    log.info("b", extra=BATCHED)
    assert stream.writes == ["a\n", "b\n"]
