"""How long RESTORE, DUMP and the replay of a RESTORE hold the event loop (issue 23, part 3:
at most 100 ms for anything the limits accept).

    python -m bench.restore

Starts a redis-server of its own (for payloads as Redis writes them: LZF-compressed) and
``xstreams serve --fsync always`` on a temporary folder, with the limits as the environment
sets them (``XSTREAMS_MAX_RESTORE_BYTES``, ``XSTREAMS_MAX_RESTORE_NODE_ENTRIES``; defaults
otherwise). Each line is one request: its status, its time and the worst latency of a PING
sent every 5 ms meanwhile (``bench.stall``: how long the request held the loop). Payloads:

- the issue's: 800,000 deleted entries and one live one in one node, ~100 KB of LZF;
- the largest each limit accepts: one node of ``max_restore_node_entries`` entries (all but
  one deleted, LZF), a stream of small entries written by xstreams's DUMP (no compression)
  and a redis-server DUMP of 3-field entries (LZF), each grown to just under
  ``max_restore_bytes`` once expanded; then the same plus one chunk, refused;
- DUMP of each restored key, and of a 200,000-entry stream (refused).

Then the server is stopped and started again on its folder: the time until /readyz answers
(interpreter start and imports included) and, in this process, the time each accepted
payload takes to replay (``load_stream`` as replay calls it, without the limits); last,
XADD into a node that never closes, which must stay linear.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable

import httpx

from app.backends import service_limits
from app.engine.errors import CommandError
from app.engine.rdb import load_stream
from app.engine.rdbio import TooLarge
from app.engine.store import Store
from app.settings import Settings
from bench import harness
from bench.harness import LOOPBACK
from bench.stall import Heavy, _fill, measure
from tests.engine.payloads import tombstones

_NO_SNAPSHOT = {
    "XSTREAMS_SNAPSHOT_AFTER_BYTES": str(1 << 60),
    "XSTREAMS_SNAPSHOT_AFTER_RECORDS": str(1 << 60),
}


def _text(payload: bytes) -> str:
    """A payload as a JSON string carries it: bytes that are not UTF-8 as ``\\udcNN``."""
    return payload.decode("utf-8", "surrogateescape")


def _command(*argv: str) -> Heavy:
    # Encoded before the clock starts, as bench.stall does.
    content = json.dumps(list(argv)).encode()
    headers = {"content-type": "application/json"}
    return lambda hc: hc.post("/", content=content, headers=headers)


def _accepted(payload: bytes, limit: int, entries: int) -> bool:
    try:
        load_stream(payload, 100, 4096, limit, entries)
    except TooLarge:
        return False
    return True


def _grown(
    make: Callable[[int], bytes], limit: int, entries: int, step: int
) -> tuple[bytes, bytes]:
    """The largest payload ``make(n)`` (n a multiple of ``step``) that the limits accept, and
    the next one, which they refuse."""
    n, last = step, make(step)
    while True:
        bigger = make(n + step)
        if not _accepted(bigger, limit, entries):
            return last, bigger
        n, last = n + step, bigger


def _xstreams_dump(n: int) -> bytes:
    """DUMP (by the engine, in process) of n entries ``f <small int>``: ~10 bytes an entry,
    the densest a stream of live entries gets."""
    store = Store()
    for i in range(n):
        store.execute(["XADD", "s", f"{i + 1}-0", "f", str(i % 100)])
    reply = store.execute(["DUMP", "s"])
    assert isinstance(reply, str)
    return reply.encode("utf-8", "surrogateescape")


class _RedisDumps:
    """A redis-server key grown by chunks of 3-field entries, DUMPed after each chunk."""

    def __init__(self, port: int) -> None:
        import redis

        self.client = redis.Redis(host=LOOPBACK, port=port)
        self.client.delete("s")
        self.n = 0

    def __call__(self, n: int) -> bytes:
        pipe = self.client.pipeline(transaction=False)
        for i in range(self.n, n):
            fields = {"user": f"u{i % 1000}", "action": "click", "ts": 1_700_000_000 + i}
            pipe.xadd("s", fields, id=f"{1_700_000_000_000 + i}-0")
        pipe.execute()
        self.n = max(self.n, n)
        payload = self.client.dump("s")
        assert isinstance(payload, bytes)
        return payload


async def _run(url: str, cases: list[tuple[str, str, bytes]]) -> None:
    for name, key, payload in cases:
        size = f"{name} ({len(payload) // 1024} KB)"
        await measure(url, size, _command("RESTORE", key, "0", _text(payload), "REPLACE"))
    for _, key, _ in cases:
        await measure(url, f"DUMP {key}", _command("DUMP", key))
    await _fill(url, "big", 200_000)
    await measure(url, "DUMP big (200,000 entries)", _command("DUMP", "big"))


def main() -> None:
    settings = Settings()
    limit, entries = settings.max_restore_bytes, settings.max_restore_node_entries
    print(f"max_restore_bytes {limit}, max_restore_node_entries {entries}")
    with harness.fleet() as fleet:
        redis_server = fleet.redis("redis")
        dense, dense_past = _grown(_xstreams_dump, limit, entries, 1000)
        lzf, lzf_past = _grown(_RedisDumps(redis_server.port), limit, entries, 500)
        cases = [
            ("issue: 800,000 tombstones, LZF", "issue", tombstones(800_000, compressed=True)),
            (
                "one node at the entries limit, LZF",
                "node",
                tombstones(entries - 1, compressed=True),
            ),
            ("one node past the entries limit", "node2", tombstones(entries, compressed=True)),
            ("xstreams DUMP, small entries, at the limit", "dense", dense),
            ("the same, one chunk more", "dense2", dense_past),
            ("redis-server DUMP, 3 fields, LZF, at the limit", "lzf", lzf),
            ("the same, one chunk more", "lzf2", lzf_past),
        ]
        folder = fleet.tmpdir("restore")
        server = fleet.xstreams("xstreams", "always", data_dir=folder, env=_NO_SNAPSHOT)
        asyncio.run(_run(f"http://{LOOPBACK}:{server.port}", cases))
        server.stop()
        t = time.perf_counter()
        again = fleet.xstreams("xstreams-again", "always", data_dir=folder, env=_NO_SNAPSHOT)
        print(f"restart on the journal until /readyz: {(time.perf_counter() - t) * 1000:.0f} ms")
        restored = httpx.post(f"http://{LOOPBACK}:{again.port}/", json=["DBSIZE"]).json()
        print(f"  keys after the restart: {restored['result']}")
    for name, _, payload in cases:
        if _accepted(payload, limit, entries):
            t, cpu = time.perf_counter(), time.thread_time()
            load_stream(payload, 100, 4096)
            wall, cpu = time.perf_counter() - t, time.thread_time() - cpu
            print(f"replay of {name}: {wall * 1000:.0f} ms ({cpu * 1000:.0f} ms CPU)")
    _cpu(cases, settings)
    t, cpu = time.perf_counter(), time.thread_time()
    load_stream(tombstones(800_000, compressed=True), 100, 4096)
    wall, cpu = time.perf_counter() - t, time.thread_time() - cpu
    print(
        "replay of the issue's payload from a journal written before the limits: "
        f"{wall * 1000:.0f} ms ({cpu * 1000:.0f} ms CPU)"
    )
    _one_node_appends()


def _cpu(cases: list[tuple[str, str, bytes]], settings: Settings) -> None:
    """The CPU time (this thread's, best of 5) of the engine's RESTORE and DUMP of each case,
    in this process: what the loop is held for on an idle machine. The wall-clock figures
    above also carry whatever else runs on the machine."""
    store = Store()
    store.keyspace.limits = service_limits(settings)
    for name, key, payload in cases:
        argv = ["RESTORE", key, "0", _text(payload), "REPLACE"]
        times = []
        for _ in range(5):
            t = time.thread_time()
            try:
                store.execute(argv)
                answer = "OK"
            except CommandError as e:
                answer = e.text[:40]
            times.append(time.thread_time() - t)
        dump = []
        for _ in range(5):
            t = time.thread_time()
            with contextlib.suppress(CommandError):  # a refusal is timed too
                store.execute(["DUMP", key])
            dump.append(time.thread_time() - t)
        print(
            f"CPU {name:<48} RESTORE {min(times) * 1000:5.1f} ms ({answer}), "
            f"DUMP {min(dump) * 1000:5.1f} ms"
        )


def _one_node_appends() -> None:
    """XADD into one node that never closes (both node limits 0, as CONFIG SET allows): each
    append must cost the same whatever the node holds (it copied the node's string)."""
    store = Store()
    store.execute(["CONFIG", "SET", "stream-node-max-entries", "0", "stream-node-max-bytes", "0"])
    done, t = 0, time.perf_counter()
    for n in (50_000, 100_000, 200_000):
        for i in range(done, n):
            store.execute(["XADD", "s", f"{i + 1}-0", "f", f"value-{i}"])
        took = time.perf_counter() - t
        print(f"XADD into one node: {n} entries in {took:.1f} s, {took / n * 1e6:.0f} us each")
        done = n


if __name__ == "__main__":
    main()
