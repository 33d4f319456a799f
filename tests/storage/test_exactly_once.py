"""Exactly once under kill -9: the consume-transform-produce recipe, and single appends.

The worker of examples/ctp_worker.py turns each input entry into two output entries and
acknowledges the input in one ``/multi-exec`` under an Idempotency-Key named after the input.
Here it runs as a subprocess against a real ``xstreams serve`` (the embedded engine with
``--fsync always``, or a Redis backend whose redis-server runs with ``appendfsync always``),
and the worker, the service and redis-server are killed with SIGKILL at seeded random
moments and restarted, until the worker reports it is done. Random kills rarely land in the
window that makes a retry dangerous (applied, but the answer lost), so the worker talks
through tests/support/kill_proxy.py, which also kills the service at chosen answers: after
the service applied a multi-exec and before the worker hears of it.

Then every input must be acknowledged (no pending entry, last-delivered = the last input)
and every input must have exactly its two outputs. The same loop without the header (the
control) must show duplicates: the test can fail.

The single-append test does the same for a client appending over REST with one key per
logical append: every append is stored exactly once, under the ID its (first) answer gave.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from examples.ctp_worker import send
from tests.conftest import Server
from tests.storage.conftest import DurableServer
from tests.support.kill_proxy import KillProxy
from tests.support.polling import until
from tests.support.redis_cluster import cluster_port
from tests.support.redis_servers import RedisProcess, need_binaries
from tests.support.targets import Frontend

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "examples" / "ctp_worker.py"
INPUTS = 300
STREAM, OUT, GROUP = "{ctp}:in", "{ctp}:out", "g"
TIMED_KILLS = 4
PROXY_KILLS = 2
# Each restart costs the service's start (1 to 10 s on a loaded 2-core box) and, on Redis, a
# front-end killed mid-request leaves its key busy (409) for the lease (10 s).
LOOP_TIMEOUT_S = 400.0
# The redis-server these tests start and kill: a port of the caller's choosing (helpers
# share a machine), else a free one.
KILL_REDIS_PORT = int(os.environ.get("XSTREAMS_TEST_KILL_REDIS_PORT", "0"))


class System:
    """The service under test (and its redis-server), started, killed and restarted."""

    def __init__(self, folder: Path, backend: str) -> None:
        self.folder = folder
        self.backend = backend
        self.server: Server | None = None
        self.redis: RedisProcess | None = None
        if backend == "redis":
            need_binaries()
            port = KILL_REDIS_PORT or cluster_port([])
            (folder / "redis").mkdir()
            self.redis = RedisProcess(folder / "redis", port)
            self.start_redis()

    def start_redis(self) -> None:
        assert self.redis is not None
        self.redis.start("--appendonly", "yes", "--appendfsync", "always")

    def start(self) -> str:
        data = self.folder / "data"
        if self.redis is None:
            self.server = DurableServer(data, f"sqlite:///{self.folder / 'xs.db'}")
        else:
            self.server = Frontend(data, "--backend", f"redis://{self.redis.address}/0")
        return self.server.url

    def kill_service(self) -> None:
        """SIGKILL, no wait: the proxy's thread calls it between an answer and its client."""
        if self.server is not None:
            # Popen's own send_signal: nothing when the process has died and been waited
            # for already (the loop's check reaps it, possibly on another thread meanwhile).
            with contextlib.suppress(ProcessLookupError):
                self.server.proc.send_signal(signal.SIGKILL)

    def service_dead(self) -> bool:
        return self.server is None or self.server.proc.poll() is not None

    def kill_redis(self) -> None:
        assert self.redis is not None and self.redis.proc is not None
        self.redis.proc.kill()
        self.redis.proc.wait()
        self.redis.proc = None

    def stop(self) -> None:
        if self.server is not None and self.server.proc.poll() is None:
            self.server.stop()
        if self.redis is not None:
            self.redis.stop()


@contextmanager
def running(
    backend: str, watch: bytes, proxy_kills: list[int]
) -> Iterator[tuple[System, KillProxy]]:
    """The service on ``backend`` behind a proxy that kills it at the ``proxy_kills``-th
    answers to requests starting with ``watch``."""
    with tempfile.TemporaryDirectory(prefix="xs-once-") as tmp:
        system = System(Path(tmp), backend)
        proxy = KillProxy(watch, proxy_kills, system.kill_service)
        try:
            system.start()
            assert system.server is not None
            proxy.upstream = system.server.port
            yield system, proxy
        finally:
            proxy.close()
            system.stop()


@dataclass
class Kills:
    """What the loop did, printed with the seed so a failure can be replayed."""

    seed: int
    timed: list[str] = field(default_factory=list)
    restarts: int = 0


def crash_loop(
    system: System,
    proxy: KillProxy,
    rng: random.Random,
    kills: Kills,
    timed_kills: int,
    victims: list[tuple[str, ...]],
    client: Client,
) -> None:
    """Kill ``rng.choice(victims)`` at random moments (``timed_kills`` times), restart
    whatever died (the proxy's kills included), until the client is done."""
    deadline = time.monotonic() + LOOP_TIMEOUT_S
    next_kill = time.monotonic() + rng.uniform(0.05, 0.6)
    while not client.done():
        assert time.monotonic() < deadline, f"not done within {LOOP_TIMEOUT_S} s: {kills}"
        if timed_kills and time.monotonic() >= next_kill:
            chosen = rng.choice(victims)
            kills.timed.append("+".join(chosen))
            if "worker" in chosen:
                client.kill()
            if "service" in chosen:
                system.kill_service()
            if "redis" in chosen:
                system.kill_redis()
                system.start_redis()
            if "worker" in chosen:
                client.start()
            timed_kills -= 1
            next_kill = time.monotonic() + rng.uniform(0.05, 0.6)
        if system.service_dead():
            assert system.server is not None
            system.server.proc.wait()
            system.start()
            proxy.upstream = system.server.port
            kills.restarts += 1
        # Until there is something to do: the client done, a death to repair, a kill due.
        until(
            lambda left=timed_kills, due=next_kill: (
                client.done() or system.service_dead() or (left > 0 and time.monotonic() >= due)
            ),
            max(0.0, deadline - time.monotonic()),
            f"done within {LOOP_TIMEOUT_S} s: {kills}",
        )


class Client:
    """What the loop drives: ``start``, ``kill`` (SIGKILL) and ``done``."""

    def start(self) -> None: ...
    def kill(self) -> None: ...
    def done(self) -> bool:
        raise NotImplementedError


class Worker(Client):
    """examples/ctp_worker.py as a subprocess, through the proxy, until idle."""

    def __init__(self, url: str, log: Path, key: bool) -> None:
        self.argv = [
            sys.executable, str(WORKER), "--url", url, "--stream", STREAM, "--group", GROUP,
            "--consumer", "c1", "--out", OUT, "--block-ms", "0", "--exit-when-idle",
            *([] if key else ["--no-key"]),
        ]  # fmt: skip
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def done(self) -> bool:
        assert self.proc is not None
        code = self.proc.poll()
        if code is None or code == -signal.SIGKILL:
            return False
        assert code == 0, f"the worker failed ({code}):\n{self.log.read_text()[-3000:]}"
        return True


def fill(url: str) -> list[str]:
    """INPUTS entries in the input stream; their IDs."""
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"entries": [{"fields": {"n": str(n)}} for n in range(INPUTS)]}
        reply = client.post(f"/v1/streams/{STREAM}/entries", json=body)
        assert reply.status_code == 201, reply.text
        ids: list[str] = reply.json()["ids"]
    assert len(ids) == INPUTS
    return ids


def outcome(url: str, inputs: list[str]) -> Counter[str]:
    """Checks that every input was acknowledged and that every output is one an input asked
    for; the count of outputs per input."""
    with httpx.Client(base_url=url, timeout=30) as client:
        [group] = send(client, "/", ["XINFO", "GROUPS", STREAM])["result"]
        info = dict(zip(group[::2], group[1::2], strict=True))
        assert info["pending"] == 0, info
        assert info["last-delivered-id"] == inputs[-1], info
        entries = send(client, "/", ["XRANGE", OUT, "-", "+"])["result"]
    n_of = {sid: n for n, sid in enumerate(inputs)}
    per_input: Counter[str] = Counter()
    parts: Counter[tuple[str, str]] = Counter()
    for _id, fields in entries:
        f = dict(zip(fields[::2], fields[1::2], strict=True))
        n = n_of[f["src"]]  # an output of an input that exists
        if f["part"] == "0":
            assert f["double"] == str(2 * n), f
        else:
            assert f["part"] == "1" and f["square"] == str(n * n), f
        per_input[f["src"]] += 1
        parts[(f["src"], f["part"])] += 1
    assert set(per_input) == set(inputs), "an input has no output"
    # Extras come whole: a transaction ran twice, never half of one.
    assert all(parts[(sid, "0")] == parts[(sid, "1")] for sid in inputs)
    return per_input


def ctp_run(backend: str, seed: int, key: bool, timed_kills: int) -> tuple[Counter[str], Kills]:
    rng = random.Random(seed)
    kills = Kills(seed)
    proxy_kills = sorted(rng.sample(range(10, INPUTS // 2), PROXY_KILLS))
    victims: list[tuple[str, ...]] = [("worker",), ("service",), ("worker", "service")]
    if backend == "redis":
        victims += [("redis",), ("service", "redis"), ("worker", "service", "redis")]
    with running(backend, b"POST /multi-exec", proxy_kills) as (system, proxy):
        assert system.server is not None
        inputs = fill(system.server.url)
        with tempfile.NamedTemporaryFile(suffix=".log") as log:
            worker = Worker(proxy.url, Path(log.name), key)
            try:
                crash_loop(system, proxy, rng, kills, timed_kills, victims, worker)
            finally:
                if worker.proc is not None and worker.proc.poll() is None:
                    worker.kill()
        print(f"seed {seed}: {kills}, proxy kills at answers {proxy_kills}")
        assert proxy.killed == PROXY_KILLS, "the proxy's kills did not all happen"
        assert system.server is not None
        return outcome(system.server.url, inputs), kills


def seed_of() -> int:
    """XSTREAMS_TEST_SEED replays a run; else a new seed each run, printed."""
    return int(os.environ.get("XSTREAMS_TEST_SEED") or random.randrange(2**32))


BACKENDS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("redis", id="redis", marks=pytest.mark.redis),
]


@pytest.mark.slow
@pytest.mark.timeout(LOOP_TIMEOUT_S + 60)
@pytest.mark.parametrize("backend", BACKENDS)
def test_consume_transform_produce_exactly_once(backend: str) -> None:
    per_input, kills = ctp_run(backend, seed_of(), key=True, timed_kills=TIMED_KILLS)
    assert len(kills.timed) == TIMED_KILLS
    extras = {sid: n for sid, n in per_input.items() if n != 2}
    assert not extras, f"inputs whose outputs are not exactly 2: {extras}"


@pytest.mark.slow  # three service starts: 10 to 30 s
@pytest.mark.timeout(LOOP_TIMEOUT_S)
def test_without_the_key_the_same_kills_duplicate() -> None:
    """The control: only the proxy's kills (after a multi-exec was applied, before its
    answer), no header: each kill makes the retry write the outputs again."""
    per_input, _ = ctp_run("embedded", seed_of(), key=False, timed_kills=0)
    duplicated = sum(n - 2 for n in per_input.values())
    assert duplicated == 2 * PROXY_KILLS


# -- single appends over REST ------------------------------------------------------------------

APPENDS = 300
APPEND_STREAM = "appends"


class Appender(Client):
    """A client thread appending ``n = 0..APPENDS-1`` over REST, one Idempotency-Key per
    logical append, retrying through kills; the ID each append was answered with."""

    def __init__(self, url: str) -> None:
        self.ids: list[str] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self.thread.start()

    def _run(self, url: str) -> None:
        try:
            with httpx.Client(base_url=url, timeout=10) as client:
                for n in range(APPENDS):
                    body = {"fields": {"n": str(n)}}
                    reply = send(client, f"/v1/streams/{APPEND_STREAM}/entries", body, f"a:{n}")
                    self.ids.append(reply["ids"][0])
        except BaseException as e:  # reported by done()
            self.error = e

    def done(self) -> bool:
        if self.error is not None:
            raise self.error
        return not self.thread.is_alive()


@pytest.mark.slow
@pytest.mark.timeout(LOOP_TIMEOUT_S + 60)
@pytest.mark.parametrize("backend", BACKENDS)
def test_single_appends_exactly_once(backend: str) -> None:
    seed = seed_of()
    rng = random.Random(seed)
    kills = Kills(seed)
    proxy_kills = sorted(rng.sample(range(10, APPENDS // 2), PROXY_KILLS))
    victims: list[tuple[str, ...]] = [("service",)]
    if backend == "redis":
        victims += [("redis",), ("service", "redis")]
    watch = f"POST /v1/streams/{APPEND_STREAM}/entries".encode()
    with running(backend, watch, proxy_kills) as (system, proxy):
        appender = Appender(proxy.url)
        crash_loop(system, proxy, rng, kills, TIMED_KILLS, victims, appender)
        print(f"seed {seed}: {kills}, proxy kills at answers {proxy_kills}")
        assert proxy.killed == PROXY_KILLS
        assert system.server is not None
        with httpx.Client(base_url=system.server.url, timeout=30) as client:
            stored = send(client, "/", ["XRANGE", APPEND_STREAM, "-", "+"])["result"]
    by_n: dict[int, list[str]] = {}
    for sid, fields in stored:
        by_n.setdefault(int(fields[1]), []).append(sid)
    assert sorted(by_n) == list(range(APPENDS)), "an append was lost"
    dup = {n: ids for n, ids in by_n.items() if len(ids) > 1}
    assert not dup, f"appends stored twice: {dup}"
    # Each answer (a replay's included) named the entry that was stored.
    assert appender.ids == [by_n[n][0] for n in range(APPENDS)]
