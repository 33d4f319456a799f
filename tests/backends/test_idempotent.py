"""``Backend.idempotent`` on both backends: a kept response is replayed, another request with
the key is refused, a second attempt while the first runs is refused; and in front of Redis,
an attempt that wrote and died (or answered 5xx) leaves its writes' replies, which the next
attempt answers from without writing again."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from app.backends.embedded import EmbeddedBackend
from app.backends.idempotency import KeyReused, StillRunning, Ticket
from app.backends.redis import RedisBackend
from app.backends.redis.idempotent import idempotent, parse_packed, record_key
from app.engine.clock import ManualClock
from app.engine.commands.streams import XAddArgs
from app.engine.errors import CommandError
from app.engine.store import Store
from tests.backends.test_redis_backend import _standalone_url
from tests.support.polling import until_async

T = Ticket(name="key:a\nk1", fingerprint=b"f1", anchor="s")


@pytest.fixture
async def redis_backend() -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(_standalone_url(), block_connections=4)
    await b.start()
    await b.command(["FLUSHDB"])
    yield b
    await b.close()


@pytest.fixture(params=["embedded", "redis"])
async def backend(
    request: pytest.FixtureRequest,
) -> AsyncIterator[EmbeddedBackend | RedisBackend]:
    if request.param == "embedded":
        yield EmbeddedBackend(Store())
        return
    b = RedisBackend.from_url(_standalone_url(), block_connections=4)
    await b.start()
    await b.command(["FLUSHDB"])
    yield b
    await b.close()


async def xlen(b: EmbeddedBackend | RedisBackend) -> int:
    reply = await b.command(["XLEN", "s"])
    assert isinstance(reply, int)
    return reply


async def test_a_kept_response_is_replayed_and_the_write_not_run_again(
    backend: EmbeddedBackend | RedisBackend,
) -> None:
    async with backend.idempotent(T) as run:
        assert run.stored is None
        await backend.append([XAddArgs("s", ("f", "v"))])
        run.keep(b"the response")
    async with backend.idempotent(T) as again:
        assert again.stored == b"the response"
    assert await xlen(backend) == 1
    with pytest.raises(KeyReused):
        async with backend.idempotent(Ticket(T.name, b"other", T.anchor)):
            pytest.fail("ran")


async def test_a_second_attempt_while_the_first_runs_is_refused(
    backend: EmbeddedBackend | RedisBackend,
) -> None:
    async with backend.idempotent(T) as run:
        with pytest.raises(StillRunning):
            async with backend.idempotent(T):
                pytest.fail("ran")
        run.keep(b"r")
    async with backend.idempotent(T) as again:
        assert again.stored == b"r"


async def test_nothing_kept_lets_the_retry_run(backend: EmbeddedBackend | RedisBackend) -> None:
    """A request answered 5xx keeps nothing: the retry runs (embedded: nothing had been
    applied; Redis: see the next test)."""
    async with backend.idempotent(T):
        pass
    async with backend.idempotent(T) as run:
        assert run.stored is None


async def test_an_attempt_that_wrote_and_died_is_answered_from_its_replies(
    redis_backend: RedisBackend,
) -> None:
    b = redis_backend
    with pytest.raises(RuntimeError):
        async with b.idempotent(T):
            first = await b.append([XAddArgs("s", ("f", "v"))])
            await b.command(["XGROUP", "CREATE", "s", "g", "0"])
            raise RuntimeError("the front-end dies before it answers")
    async with b.idempotent(T) as run:
        assert run.stored is None and run.resumed
        assert await b.append([XAddArgs("s", ("f", "v"))]) == first
        assert await b.command(["XGROUP", "CREATE", "s", "g", "0"]) == "OK"  # not BUSYGROUP
        # A write beyond what the first attempt made runs.
        await b.command(["XADD", "s", "*", "f", "w"])
        run.keep(b"done")
    assert await xlen(b) == 2


async def test_a_lease_that_ran_out_passes_to_the_next_attempt(
    redis_backend: RedisBackend,
) -> None:
    b = redis_backend
    first = idempotent(b.router.call_plain, False, T, 60_000, lease_ms=50)
    await first.__aenter__()
    with pytest.raises(StillRunning):
        async with b.idempotent(T):
            pytest.fail("ran")
    started = time.monotonic()

    async def takes_over() -> bool:
        try:
            async with b.idempotent(T) as run:
                await b.command(["XADD", "s", "*", "f", "v"])
                run.keep(b"second")
        except StillRunning:
            return False
        return True

    await until_async(takes_over, what="the next attempt, once the 50 ms lease ran out")
    assert time.monotonic() - started < 5  # the lease's 50 ms, not the window's minute
    # The first attempt, back from a stall, can no longer write under the key.
    with pytest.raises(StillRunning):
        await b.command(["XADD", "s", "*", "f", "late"])
    await first.__aexit__(None, None, None)
    assert await xlen(b) == 1
    async with b.idempotent(T) as again:
        assert again.stored == b"second"


async def test_the_record_expires_with_the_window(redis_backend: RedisBackend) -> None:
    b = redis_backend
    b.idempotency_window_ms = 5_000
    async with b.idempotent(T) as run:
        run.keep(b"r")
    ttl = await b.router.call_plain(None, "PTTL", record_key(T, cluster=False))
    assert 0 < int(ttl) <= 5_000


def test_kept_replies_read_back_as_redis_py_parses_them() -> None:
    from redis.exceptions import ResponseError

    value = parse_packed(b"*4:$3:abc:12;_*2:-8:ERR nope+2:OK")
    assert value[:3] == [b"abc", 12, None]
    error, status = value[3]
    assert isinstance(error, ResponseError) and str(error) == "ERR nope"
    assert status == b"OK"


async def test_embedded_responses_expire_with_the_window() -> None:
    clock = ManualClock()
    b = EmbeddedBackend(Store(clock=clock))
    b.store.keyspace.responses.window_ms = 1_000
    async with b.idempotent(T) as run:
        run.keep(b"r")
    clock.advance(999)
    async with b.idempotent(T) as run:
        assert run.stored == b"r"
    clock.advance(1)
    async with b.idempotent(T) as run:
        assert run.stored is None


async def test_a_command_too_long_for_a_script_is_refused_clearly(
    redis_backend: RedisBackend,
) -> None:
    ids = [f"{i}-0" for i in range(1, 8_001)]
    async with redis_backend.idempotent(T):
        with pytest.raises(CommandError, match="cannot run under an Idempotency-Key"):
            await redis_backend.command(["XACK", "s", "g", *ids])
    # Without the key it runs (Redis answers: no such group, nothing acknowledged).
    assert await redis_backend.command(["XACK", "s", "g", *ids]) == 0
