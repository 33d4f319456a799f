"""The delivery-policy soak (issue 27): ``python -m bench.soak [--quick] [--backend URL]``.

10 consumers of one group read a stream a producer fills at a steady rate (100,000 entries;
``--quick`` 20,000). 5% of the entries always fail: each time one is delivered, its consumer
XNACKs it (FAIL); every other entry is acknowledged at once. The group's policy has
``max_deliveries`` and a dead-letter stream, so a failing entry comes back (a claim the
policy makes) until it has been delivered ``max_deliveries`` times, then moves to the
dead-letter stream. The soak checks, and prints:

- every entry was acknowledged or dead-lettered exactly once (never both, never neither),
  with nothing left pending;
- the dead-letter stream holds exactly the failing set (by ``xs-dl-id``);
- the p50 / p99 delivery latency of healthy entries (from its append, by its ID's time, to
  the read that delivered it), beside a run of the same shape without failures: the issue
  asks the p99 to stay within 2x.

It drives the ``Backend`` in process (the embedded engine by default, or Redis by URL), the
way the surfaces do, so the figure is the policy's cost in delivery, not HTTP's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass, field

from app.backends import Backend, open_backend
from app.engine.commands.nack import NackArgs, NackMode
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.delivery import DeliveryPolicy, split_dead_letter
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.node_reads import Entry
from app.settings import Settings

CONSUMERS = 10
FAILING_EVERY = 20  # 5%
MAX_DELIVERIES = 3
BATCH = 100  # entries per append
READ_COUNT = 50
STREAM, DEAD, GROUP = "{soak}", "{soak}:dead", "workers"


@dataclass
class Run:
    """What one run saw."""

    entries: int
    failing: bool
    acked: dict[str, int] = field(default_factory=dict)  # entry ID -> times acknowledged
    latency_ms: list[float] = field(default_factory=list)  # healthy entries' first delivery
    deliveries: int = 0
    seconds: float = 0.0


def fails(n: int, failing: bool) -> bool:
    return failing and n % FAILING_EVERY == 0


async def produce(backend: Backend, entries: int, rate_per_s: float) -> None:
    """Append ``entries`` in batches, at about ``rate_per_s`` entries a second."""
    started = time.monotonic()
    for first in range(0, entries, BATCH):
        batch = [
            XAddArgs(STREAM, ("n", str(n), "payload", "x" * 32))
            for n in range(first, min(first + BATCH, entries))
        ]
        await backend.append(batch)
        due = started + (first + BATCH) / rate_per_s
        await asyncio.sleep(max(0.0, due - time.monotonic()))


async def consume(backend: Backend, name: str, run: Run, done: asyncio.Event) -> None:
    while not done.is_set():
        read = ReadRequest([STREAM], [">"], READ_COUNT, 100, GROUP, name)
        replies = await backend.read(read)
        now_ms = time.time() * 1000
        acks: list[StreamID] = []
        nacks: list[StreamID] = []
        for reply in replies:
            for entry in reply.entries:
                if not isinstance(entry, Entry):
                    continue
                run.deliveries += 1
                n = int(entry.fields[1])
                if fails(n, run.failing):
                    nacks.append(entry.id)
                    continue
                acks.append(entry.id)
                run.latency_ms.append(now_ms - entry.id.ms)
        if acks:
            await backend.ack(STREAM, GROUP, acks)
            for sid in acks:
                key = str(sid)
                run.acked[key] = run.acked.get(key, 0) + 1
        if nacks:
            await backend.nack(NackArgs(STREAM, GROUP, NackMode.FAIL, nacks))


async def one_run(backend: Backend, entries: int, failing: bool, rate_per_s: float) -> Run:
    await backend.command(["FLUSHALL"])
    await backend.create_group(STREAM, GROUP, "0", True, None)
    policy = DeliveryPolicy(max_deliveries=MAX_DELIVERIES, dead_letter_stream=DEAD)
    await backend.set_delivery_policy(STREAM, GROUP, policy)
    run = Run(entries, failing)
    done = asyncio.Event()
    started = time.monotonic()
    workers = [asyncio.create_task(consume(backend, f"c{i}", run, done)) for i in range(CONSUMERS)]
    await produce(backend, entries, rate_per_s)
    dead_expected = (entries + FAILING_EVERY - 1) // FAILING_EVERY if failing else 0
    healthy = entries - dead_expected
    while True:  # until every entry is acknowledged or dead-lettered
        summary = await backend.pending_summary(STREAM, GROUP)
        dead = await _dead_count(backend)
        if len(run.acked) >= healthy and dead >= dead_expected and summary.count == 0:
            break
        await asyncio.sleep(0.05)
    done.set()
    await asyncio.gather(*workers)
    run.seconds = time.monotonic() - started
    return run


async def _dead_count(backend: Backend) -> int:
    try:
        return (await backend.stream_info(DEAD)).header.length
    except Exception:
        return 0


async def dead_ids(backend: Backend) -> list[str]:
    ids: list[str] = []
    start = MIN_ID
    while True:
        page = await backend.range(RangeArgs(DEAD, start, MAX_ID, 1000))
        for entry in page:
            split = split_dead_letter(entry.fields)
            assert split is not None, entry
            ids.append(str(split[1].id))
        if len(page) < 1000:
            return ids
        last = page[-1].id
        start = StreamID(last.ms, last.seq + 1)


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if values else 0.0


async def main_async(entries: int, backend_url: str, rate_per_s: float) -> int:
    settings = Settings(backend=backend_url)
    backend = open_backend(settings)
    await backend.start()
    problems: list[str] = []
    try:
        plain = await one_run(backend, entries, False, rate_per_s)
        failing = await one_run(backend, entries, True, rate_per_s)
        appended = await _all(backend)
        dead = await dead_ids(backend)
    finally:
        await backend.close()
    all_ids = [e.id for e in appended]
    failing_ids = {str(e.id) for e in appended if fails(int(e.fields[1]), True)}
    twice = [k for k, v in failing.acked.items() if v != 1]
    both = set(failing.acked) & set(dead)
    neither = {str(s) for s in all_ids} - set(failing.acked) - set(dead)
    if twice:
        problems.append(f"{len(twice)} entries acknowledged more than once")
    if both:
        problems.append(f"{len(both)} entries both acknowledged and dead-lettered")
    if neither:
        problems.append(f"{len(neither)} entries neither acknowledged nor dead-lettered")
    if len(dead) != len(set(dead)):
        problems.append("an entry was dead-lettered twice")
    if set(dead) != failing_ids:
        problems.append(
            f"dead letters ({len(dead)}) differ from the failing set ({len(failing_ids)})"
        )
    p99_plain, p99_failing = pct(plain.latency_ms, 99), pct(failing.latency_ms, 99)
    print(f"delivery-policy soak: {entries:,} entries, {CONSUMERS} consumers, backend "
          f"{backend_url}, {rate_per_s:,.0f} entries/s offered, 5% failing "
          f"(XNACK FAIL), max_deliveries {MAX_DELIVERIES}")  # fmt: skip
    print(
        "| run | seconds | deliveries | acknowledged | dead-lettered | healthy p50 ms "
        "| healthy p99 ms |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, r, n_dead in (("no failures", plain, 0), ("5% failing", failing, len(dead))):
        print(f"| {label} | {r.seconds:.1f} | {r.deliveries:,} | {len(r.acked):,} | {n_dead:,} "
              f"| {pct(r.latency_ms, 50):.1f} | {pct(r.latency_ms, 99):.1f} |")  # fmt: skip
    ratio = p99_failing / p99_plain if p99_plain else float("inf")
    print(f"p99 ratio (failing / plain): {ratio:.2f} (target: within 2x)")
    print(
        f"every entry acknowledged or dead-lettered exactly once: {not (twice or both or neither)}"
    )
    print(f"dead-letter count equals the failing set ({len(failing_ids):,}): "
          f"{set(dead) == failing_ids}")  # fmt: skip
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


async def _all(backend: Backend) -> list[Entry]:
    out: list[Entry] = []
    start = MIN_ID
    while True:
        page = await backend.range(RangeArgs(STREAM, start, MAX_ID, 10_000))
        out += page
        if len(page) < 10_000:
            return out
        last = page[-1].id
        start = StreamID(last.ms, last.seq + 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="20,000 entries instead of 100,000")
    parser.add_argument("--backend", default="embedded", help="embedded (default) or a Redis URL")
    parser.add_argument(
        "--rate", type=float, default=10_000.0, help="entries/s the producer offers"
    )
    args = parser.parse_args()
    entries = 20_000 if args.quick else 100_000
    sys.exit(asyncio.run(main_async(entries, args.backend, args.rate)))


if __name__ == "__main__":
    main()
