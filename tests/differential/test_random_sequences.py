"""Randomized differential runs: seeded command sequences sent to xstreams and redis-server.

Hand-written differential tests only cover the interactions someone thought of. These runs mix
every stream command over a few keys, groups and consumers, so that state built by one command
(trimmed nodes, PEL entries, last-delivered IDs, entries-read counters, tombstones) is checked by
the replies of all the others, and after every write by every read of the keys it changed
(``checks.read_all``: ranges, XREAD, every XINFO form, XPENDING, history reads, DUMP crossed
both ways). Every reply is compared by ``ExactPair``, radix-tree-keys included (the engine
keeps Redis's nodes one for one). The commands come from ``generator.Generator``; the run
itself is ``walk.walk``. ``test_walks`` runs hundreds more, short, with small nodes.

On a mismatch the failure message names the seed, profile, step and command, and the whole
sequence up to the failing step is written to a JSON file. To replay or shrink it::

    .venv/bin/python -m tests.differential.test_random_sequences replay FILE.json
    .venv/bin/python -m tests.differential.test_random_sequences minimize FILE.json
    .venv/bin/python -m tests.differential.test_random_sequences generate SEED PROFILE

``replay``/``minimize`` start their own xstreams server (or take ``--url`` of a running one, or
``--against host:port`` of another redis-server) and use redis-server's database
``XSTREAMS_TEST_REDIS_DB`` (default 9), which they flush. A run of ``test_walks`` sets node
limits with CONFIG SET: its replay sets them on that server too, and puts Redis's defaults
back at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands
from tests.differential.exact import ExactPair, RespClient
from tests.differential.generator import PROFILES, Command, Generator, Sender
from tests.differential.support import NODES_COMPARED
from tests.differential.walk import as_json, report, step, walk

CASES: list[tuple[str, int]] = [
    # 324 and 326 reach an out-of-order node: XSETID below a deleted top entry, then XADD.
    *(("mixed", seed) for seed in (1, 2, 3, 4, 5, 324, 326)),
    *(("groups", seed) for seed in (11, 12, 13)),
    *(("bulk", seed) for seed in (21, 29)),
    ("fat", 31),
]


# ------------------------------------------------------------------------- running


def generate(seed: int, profile_name: str, ref: Sender) -> list[Command]:
    """The command sequence of a run, regenerated from redis-server alone (db must be empty);
    without the reads that follow each write (``walk`` adds those)."""
    profile = PROFILES[profile_name]
    gen = Generator(seed, profile)
    out: list[Command] = []
    for _ in range(profile.steps):
        cmd = gen.next_command(ref)
        out.append(cmd)
        gen.observe(cmd, ref(*cmd))
    return out


@pytest.mark.redis
@pytest.mark.parametrize(("profile_name", "seed"), CASES, ids=[f"{p}-{s}" for p, s in CASES])
def test_random_sequence(
    profile_name: str, seed: int, pair: ExactPair, xs_mode: str, tmp_path: Path
) -> None:
    """Each reply of a seeded random command sequence equals redis-server's, and so does
    every read after each write (in process; over HTTP, every read at the end)."""
    profile = PROFILES[profile_name]
    pair.masked = NODES_COMPARED
    gen = Generator(seed, profile)
    history, failure = walk(pair, gen, profile.steps, every_step=xs_mode == "inproc")
    if failure is not None:
        label = f"seed={seed} profile={profile_name}"
        test = f"test_random_sequences.py::test_random_sequence[inproc-{profile_name}-{seed}]"
        again = f"pytest 'tests/differential/{test}'"
        report(history, failure, tmp_path, label, again)
    # The run must have built real state, or it proves little.
    assert sum(1 for c in history if c[0] == "XADD") > profile.steps // 10


# --------------------------------------------------------------- replay and shrinking


def first_mismatch(
    cmds: Sequence[Command], xs: Sender, ref: RespClient
) -> tuple[int, Any, Any] | None:
    """Runs ``cmds`` on both (flushed first); the first differing step, if any."""
    assert xs("FLUSHALL") == "OK"
    assert ref("FLUSHDB") == "OK"
    pair = ExactPair(xs, None, NODES_COMPARED, resp=ref)
    for i, cmd in enumerate(cmds):
        try:
            step(pair, cmd)
        except AssertionError as e:
            payload = e.args[0] if e.args else None
            if isinstance(payload, tuple) and len(payload) == 3:
                return i, payload[1], payload[2]
            return i, str(e), None
    return None


def minimize(cmds: list[Command], xs: Sender, ref: RespClient) -> list[Command]:
    """Delta-debug ``cmds`` down to a short sequence that still shows a mismatch."""
    found = first_mismatch(cmds, xs, ref)
    if found is None:
        return []
    cmds = cmds[: found[0] + 1]
    chunk = max(1, len(cmds) // 2)
    while chunk >= 1:
        i = 0
        changed = False
        while i < len(cmds) - 1:
            # Drop cmds[i:i+chunk], but never the failing (last) command.
            trial = cmds[:i] + cmds[min(i + chunk, len(cmds) - 1) :]
            hit = first_mismatch(trial, xs, ref)
            if hit is not None:
                cmds = trial[: hit[0] + 1]
                changed = True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return cmds


def _main(argv: list[str]) -> int:
    from tests.conftest import REDIS_DB, REDIS_HOST, REDIS_PORT, Server

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    g = sub.add_parser("generate", help="print a run's commands as JSON")
    g.add_argument("seed", type=int)
    g.add_argument("profile", choices=sorted(PROFILES))
    for name in ("replay", "minimize"):
        p = sub.add_parser(name, help=f"{name} a JSON command list against xstreams")
        p.add_argument("file", type=Path)
        p.add_argument("--url", help="an already running xstreams (default: start one)")
        p.add_argument("--against", help="host:port of another redis-server to use instead")
    args = parser.parse_args(argv)

    ref = RespClient(REDIS_HOST, REDIS_PORT, REDIS_DB)
    try:
        if args.action == "generate":
            assert ref("FLUSHDB") == "OK"
            cmds = generate(args.seed, args.profile, ref)
            print(as_json(cmds))
            return 0
        cmds = [tuple(c) for c in json.loads(args.file.read_text())]
        server = None if args.url or args.against else Server(Path(tempfile.mkdtemp()))
        xs: Sender
        if args.against:
            host, _, port = args.against.rpartition(":")
            xs = RespClient(host, int(port))
        else:
            xs = Commands(args.url or server.url)  # type: ignore[union-attr]
        try:
            if args.action == "minimize":
                cmds = minimize(cmds, xs, ref)
                print(as_json(cmds))
            hit = first_mismatch(cmds, xs, ref)
        finally:
            if server is not None:
                server.stop()
        if hit is None:
            print("no mismatch")
            return 0
        i, expected, actual = hit
        print(f"step {i}: {list(cmds[i])!r}\n  redis:    {expected!r}\n  xstreams: {actual!r}")
        return 1
    finally:
        ref("FLUSHDB")
        if args.action != "generate" and any(c[:2] == ("CONFIG", "SET") for c in cmds):
            ref("CONFIG", "SET", "stream-node-max-entries", "100")
            ref("CONFIG", "SET", "stream-node-max-bytes", "4096")
        ref.close()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
