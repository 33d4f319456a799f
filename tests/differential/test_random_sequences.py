"""Randomized differential runs: seeded command sequences sent to xstreams and redis-server.

Hand-written differential tests only cover the interactions someone thought of. These runs mix
every stream command over a few keys, groups and consumers, so that state built by one command
(trimmed nodes, PEL entries, last-delivered IDs, entries-read counters, tombstones) is checked by
the replies of all the others. Every reply is compared by the ``pair`` fixture (``ExactPair``:
``Pair`` reading redis-server's replies verbatim).

Reproducibility: a run is fully determined by its seed and profile. The generator only ever
looks at reply parts that are independent of the wall clock and that ``Pair`` has already
found equal on both servers (plus ``XLEN`` probes of redis-server), so the same seed produces
the same command sequence every time. Nothing uses ``*`` IDs or idle thresholds other than 0.

On a mismatch the failure message names the seed, profile, step and command, and the whole
sequence up to the failing step is written to a JSON file. To replay or shrink it::

    .venv/bin/python -m tests.differential.test_random_sequences replay FILE.json
    .venv/bin/python -m tests.differential.test_random_sequences minimize FILE.json
    .venv/bin/python -m tests.differential.test_random_sequences generate SEED PROFILE

``replay``/``minimize`` start their own xstreams server (or take ``--url`` of a running one, or
``--against host:port`` of another redis-server) and use redis-server's database
``XSTREAMS_TEST_REDIS_DB`` (default 9), which they flush.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands, ReplyError
from tests.differential.exact import ExactPair, RespClient
from tests.differential.support import mask

Command = tuple[str, ...]
# Sends one command somewhere and returns the reply in the Upstash shape.
Sender = Callable[..., Any]

GROUPS = ("g1", "g2", "g3")
CONSUMERS = ("alice", "bob", "carol")
MAX_ID_PART = 18446744073709551615


@dataclass(frozen=True)
class Profile:
    """How a run is shaped: which keys, how many steps, and how often each command is sent."""

    name: str
    steps: int
    keys: tuple[str, ...]
    weights: dict[str, float]
    # Probability that a value is a long string (pushes nodes to the 4096-byte limit).
    fat: float = 0.05
    # How many entries a trim cuts at most (usually far fewer, now and then more than a node).
    cut: int = 30
    # Probability that an XADD carries a MAXLEN/MINID clause.
    trim_p: float = 0.2


_BASE_WEIGHTS: dict[str, float] = {
    "XADD": 30,
    "XDEL": 4,
    "XTRIM": 4,
    "XSETID": 2,
    "XRANGE": 6,
    "XREVRANGE": 4,
    "XREAD": 4,
    "XLEN": 2,
    "XGROUP CREATE": 4,
    "XGROUP SETID": 2,
    "XGROUP DESTROY": 1,
    "XGROUP CREATECONSUMER": 2,
    "XGROUP DELCONSUMER": 1,
    "XREADGROUP": 10,
    "XACK": 5,
    "XPENDING": 5,
    "XCLAIM": 5,
    "XAUTOCLAIM": 4,
    "XINFO STREAM": 3,
    "XINFO GROUPS": 2,
    "XINFO CONSUMERS": 2,
    "DEL": 0.5,
    "EXISTS": 1,
}

PROFILES: dict[str, Profile] = {
    # Everything at once on three small streams.
    "mixed": Profile("mixed", 500, ("s1", "s2", "s3"), _BASE_WEIGHTS),
    # Consumer-group bookkeeping dominates: PELs, claims, lag and entries-read.
    "groups": Profile(
        "groups",
        500,
        ("s1", "s2", "s3", "s4"),
        {
            **_BASE_WEIGHTS,
            "XADD": 25,
            "XREADGROUP": 18,
            "XACK": 8,
            "XCLAIM": 9,
            "XAUTOCLAIM": 7,
            "XPENDING": 7,
            "XGROUP SETID": 4,
            "XINFO STREAM": 4,
            "XINFO GROUPS": 4,
            "XINFO CONSUMERS": 4,
            "XTRIM": 2,
            "DEL": 0.3,
        },
    ),
    # Hundreds of entries per stream, trimmed now and then, mostly with `~` so whole radix
    # nodes (100 entries or 4096 bytes) are dropped or kept.
    "bulk": Profile(
        "bulk",
        1200,
        ("s1", "s2"),
        {
            **_BASE_WEIGHTS,
            "XADD": 240,
            "XTRIM": 2,
            "XDEL": 6,
            "DEL": 0,
            "XSETID": 0.5,
        },
        fat=0.04,
        cut=180,
        trim_p=0.02,
    ),
    # Long values, so nodes close on the byte limit rather than the entry limit.
    "fat": Profile(
        "fat",
        600,
        ("s1", "s2"),
        {**_BASE_WEIGHTS, "XADD": 80, "XTRIM": 3, "DEL": 0},
        fat=0.45,
        cut=60,
        trim_p=0.08,
    ),
}

CASES: list[tuple[str, int]] = [
    # 324 and 326 reach an out-of-order node: XSETID below a deleted top entry, then XADD.
    *(("mixed", seed) for seed in (1, 2, 3, 4, 5, 324, 326)),
    *(("groups", seed) for seed in (11, 12, 13)),
    *(("bulk", seed) for seed in (21, 29)),
    ("fat", 31),
]


def _parse_id(text: str) -> tuple[int, int] | None:
    ms, _, seq = text.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        return None


class Generator:
    """Draws the next command from a seeded RNG and a model fed by the (already equal) replies."""

    def __init__(self, seed: int, profile: Profile) -> None:
        self.rng = random.Random(f"{profile.name}:{seed}")
        self.profile = profile
        self.keys = profile.keys
        self.names = list(profile.weights)
        self.weights = list(profile.weights.values())
        self.last: dict[str, tuple[int, int]] = {k: (0, 0) for k in self.keys}
        self.ids: dict[str, list[str]] = {k: [] for k in self.keys}
        self.delivered: dict[str, list[str]] = {k: [] for k in self.keys}
        self.groups: dict[str, set[str]] = {k: set() for k in self.keys}
        # The run opens by creating a couple of groups per stream, then goes random.
        self.setup: list[Command] = [
            ("XGROUP", "CREATE", k, g, "0", "MKSTREAM") for k in self.keys for g in GROUPS[:2]
        ]
        self.probe: Sender = lambda *a: 0

    def length(self, key: str) -> int:
        """The stream's current length, asked of redis-server (read-only, so not compared)."""
        n = self.probe("XLEN", key)
        return n if isinstance(n, int) else 0

    # ----------------------------------------------------------------- small random pieces

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def key(self) -> str:
        if self.chance(0.02):
            return "stray"
        return self.rng.choice(self.keys)

    def group(self, key: str | None = None) -> str:
        """Mostly a group known to exist on ``key``: NOGROUP errors are tested, not the norm."""
        if self.chance(0.02):
            return "nogroup"
        known = sorted(self.groups.get(key, ())) if key else []
        if known and self.chance(0.85):
            return self.rng.choice(known)
        return self.rng.choice(GROUPS)

    def consumer(self) -> str:
        return self.rng.choice(CONSUMERS)

    def count(self) -> str:
        if self.chance(0.05):
            return self.rng.choice(["0", "-1", "x"])
        return str(self.rng.randint(1, 15))

    def existing_id(self, key: str, pool: dict[str, list[str]] | None = None) -> str:
        ids = (pool or self.ids).get(key) or self.ids.get(key) or []
        if not ids:
            return self.random_id(key)
        # Favor recent IDs: older ones are more likely trimmed away.
        if self.chance(0.6):
            return ids[-self.rng.randint(1, min(len(ids), 40))]
        return self.rng.choice(ids)

    def random_id(self, key: str) -> str:
        ms, seq = self.last.get(key, (0, 0))
        return f"{self.rng.randint(0, ms + 3)}-{self.rng.randint(0, seq + 3)}"

    def some_id(self, key: str) -> str:
        """An ID that often exists, sometimes does not, and is now and then incomplete."""
        r = self.rng.random()
        if r < 0.7:
            sid = self.existing_id(key)
        elif r < 0.9:
            sid = self.random_id(key)
        else:
            sid = self.rng.choice(["0", "0-0", "0-1", "1"])
        if self.chance(0.15):
            sid = sid.partition("-")[0]
        return sid

    def bound(self, key: str, low: bool) -> str:
        r = self.rng.random()
        if r < 0.25:
            return "-" if low else "+"
        if r < 0.3:
            return "+" if low else "-"
        if r < 0.32:
            return self.rng.choice(["(-", "(+", "abc", "1-", "-1", "(0-0", "(18446744073709551615"])
        sid = self.some_id(key)
        if self.chance(0.3):
            sid = "(" + sid
        return sid

    def value(self) -> str:
        r = self.rng.random()
        if r < self.profile.fat:
            return "".join(
                self.rng.choices(
                    "abcdefghijklmnopqrstuvwxyz0123456789", k=self.rng.randint(40, 700)
                )
            )
        r = self.rng.random()
        if r < 0.3:
            return str(self.rng.randint(-200, 5000))
        if r < 0.4:
            return str(self.rng.choice([2**31, -(2**40), 2**63 - 1, -(2**63), 12345678901]))
        if r < 0.47:
            return self.rng.choice(["012", "-0", "+1", " 1", "1.5", "9223372036854775808", "0x10"])
        if r < 0.52:
            return self.rng.choice(["", "é", "日本語", "ß" * 30, "a b"])
        return "".join(self.rng.choices("abcdefghij", k=self.rng.randint(1, 24)))

    def fields(self) -> list[str]:
        r = self.rng.random()
        if r < 0.55:
            names = ["name", "value"]
        elif r < 0.75:
            names = ["f"]
        else:
            names = [
                self.rng.choice(["f", "g", "name", "value", "x", "", "7", "long-field-name"])
                for _ in range(self.rng.randint(1, 4))
            ]
        out: list[str] = []
        for n in names:
            out += [n, self.value()]
        if self.chance(0.01):
            out.pop()  # odd number of arguments: wrong number of arguments error
        return out

    def trim_args(self, key: str) -> list[str]:
        """A MAXLEN/MINID clause (``=``, ``~`` or neither; LIMIT now and then) for ``key``."""
        strategy = "MAXLEN" if self.chance(0.6) else "MINID"
        op = self.rng.choices(["", "=", "~"], [0.25, 0.25, 0.5])[0]
        out = [strategy if self.chance(0.9) else strategy.lower()]
        if op:
            out.append(op)
        n = self.length(key)
        # How many entries to cut: mostly a few, now and then more than a whole node.
        cut = int(self.profile.cut * self.rng.random() ** 2)
        if self.chance(0.9):
            cut = min(cut, n // 2)  # let streams grow in the long run
        if strategy == "MAXLEN":
            threshold = str(max(0, n - cut + self.rng.randint(-2, 5)))
            if self.chance(0.02):
                threshold = self.rng.choice(["-1", "x", "0"])
        else:
            ids = self.ids.get(key) or []
            if ids and self.chance(0.97):
                # Roughly the live entries are the last `n` IDs added; cut `cut` of them.
                index = len(ids) - n + cut + self.rng.randint(-3, 3)
                threshold = ids[min(max(index, 0), len(ids) - 1)]
            else:
                threshold = self.random_id(key)
            if self.chance(0.1):
                threshold = threshold.partition("-")[0]
        out.append(threshold)
        if self.chance(0.3 if op == "~" else 0.03):
            out += ["LIMIT", str(self.rng.choice([0, 1, 10, 50, 100, 150, 250, 1000]))]
        return out

    # --------------------------------------------------------------------- per command

    def next_command(self, probe: Sender) -> Command:
        """The next command; ``probe`` runs read-only commands on redis-server (for XLEN)."""
        self.probe = probe
        if self.setup:
            return self.setup.pop(0)
        name = self.rng.choices(self.names, weights=self.weights)[0]
        method = getattr(self, "cmd_" + name.replace(" ", "_").lower())
        return tuple(str(a) for a in method())

    def cmd_xadd(self) -> list[str]:
        key = self.key()
        args = ["XADD", key]
        if self.chance(0.05):
            args.append("NOMKSTREAM")
        if self.chance(self.profile.trim_p):
            args += self.trim_args(key)
        ms, seq = self.last.get(key, (0, 0))
        r = self.rng.random()
        if r < 0.6:
            step = self.rng.choice([0, 0, 0, 1, 1, 2, 7, 1000])
            if step == 0 and seq < MAX_ID_PART - 5:
                sid = f"{ms}-{seq + self.rng.randint(1, 3)}"
            else:
                sid = f"{ms + max(step, 1)}-{self.rng.randint(0, 3)}"
        elif r < 0.85:
            sid = f"{ms + self.rng.choice([0, 0, 1, 3])}-*"
        elif r < 0.9:
            sid = str(ms + self.rng.randint(1, 5))
        elif r < 0.98:
            sid = self.rng.choice(
                [f"{ms}-{seq}", f"{max(ms - 1, 0)}-{seq + 5}", "0-0", "0-*", f"{max(ms - 1, 0)}-*"]
            )
        else:
            sid = self.rng.choice(["abc", "1-x", "-1", f"{ms + 1}-{MAX_ID_PART + 1}", "1-2-3"])
        return [*args, sid, *self.fields()]

    def cmd_xdel(self) -> list[str]:
        key = self.key()
        ids = [self.existing_id(key) for _ in range(self.rng.randint(1, 4))]
        if self.chance(0.2):
            ids.append(self.random_id(key))
        if self.chance(0.02):
            ids.append("bad")
        return ["XDEL", key, *ids]

    def cmd_xtrim(self) -> list[str]:
        key = self.key()
        return ["XTRIM", key, *self.trim_args(key)]

    def cmd_xsetid(self) -> list[str]:
        key = self.key()
        ms, seq = self.last.get(key, (0, 0))
        r = self.rng.random()
        if r < 0.6:
            sid = f"{ms + self.rng.randint(0, 5)}-{seq + self.rng.randint(0, 5)}"
        elif r < 0.8:
            sid = self.existing_id(key)
        else:
            sid = self.random_id(key)
        args = ["XSETID", key, sid]
        if self.chance(0.3):
            n = self.length(key)
            args += ["ENTRIESADDED", str(self.rng.randint(max(0, n - 3), n + 50))]
        if self.chance(0.3):
            args += ["MAXDELETEDID", self.rng.choice([self.existing_id(key), "0-0", sid])]
        return args

    def _range(self, name: str) -> list[str]:
        key = self.key()
        lo, hi = self.bound(key, True), self.bound(key, False)
        args = [name, key, *((hi, lo) if name == "XREVRANGE" else (lo, hi))]
        if self.chance(0.6):
            args += ["COUNT", self.count()]
        return args

    def cmd_xrange(self) -> list[str]:
        return self._range("XRANGE")

    def cmd_xrevrange(self) -> list[str]:
        return self._range("XREVRANGE")

    def _streams(self, group: bool, keys: list[str] | None = None) -> list[str]:
        keys = keys or self.stream_keys()
        if self.chance(0.05):
            keys.append("stray")
        ids = []
        for k in keys:
            if group and self.chance(0.8):
                ids.append(">")
                continue
            r = self.rng.random()
            if r < 0.3:
                ids.append(self.rng.choice(["0", "0-0"]))
            elif r < 0.4:
                ids.append("$")
            elif r < 0.95:
                ids.append(self.some_id(k))
            else:
                ids.append(self.rng.choice(["+", "-", "x"]))
        return ["STREAMS", *keys, *ids]

    def cmd_xread(self) -> list[str]:
        args = ["XREAD"]
        if self.chance(0.6):
            args += ["COUNT", self.count()]
        return args + self._streams(group=False)

    def cmd_xlen(self) -> list[str]:
        return ["XLEN", self.key()]

    def _entries_read(self) -> list[str]:
        if not self.chance(0.3):
            return []
        return ["ENTRIESREAD", str(self.rng.choice([-1, 0, 1, 3, 10, 50, 500, -2]))]

    def cmd_xgroup_create(self) -> list[str]:
        key = self.key()
        r = self.rng.random()
        sid = "$" if r < 0.3 else "0" if r < 0.6 else self.some_id(key)
        args = ["XGROUP", "CREATE", key, self.group(), sid]
        if self.chance(0.2):
            args.append("MKSTREAM")
        return args + self._entries_read()

    def cmd_xgroup_setid(self) -> list[str]:
        key = self.key()
        r = self.rng.random()
        sid = "$" if r < 0.3 else "0" if r < 0.5 else self.some_id(key)
        return ["XGROUP", "SETID", key, self.group(key), sid, *self._entries_read()]

    def cmd_xgroup_destroy(self) -> list[str]:
        key = self.key()
        return ["XGROUP", "DESTROY", key, self.group(key)]

    def cmd_xgroup_createconsumer(self) -> list[str]:
        key = self.key()
        return ["XGROUP", "CREATECONSUMER", key, self.group(key), self.consumer()]

    def cmd_xgroup_delconsumer(self) -> list[str]:
        key = self.key()
        return ["XGROUP", "DELCONSUMER", key, self.group(key), self.consumer()]

    def stream_keys(self) -> list[str]:
        n = self.rng.choices([1, 2, 3], [0.6, 0.3, 0.1])[0]
        return self.rng.sample(list(self.keys), min(n, len(self.keys)))

    def cmd_xreadgroup(self) -> list[str]:
        keys = self.stream_keys()
        # A group that exists on every key read, when there is one.
        common = set.intersection(*(self.groups[k] for k in keys))
        if common and self.chance(0.9):
            group = self.rng.choice(sorted(common))
        else:
            group = self.group(keys[0])
        args = ["XREADGROUP", "GROUP", group, self.consumer()]
        if self.chance(0.7):
            args += ["COUNT", self.count()]
        if self.chance(0.15):
            args.append("NOACK")
        return args + self._streams(group=True, keys=keys)

    def pending_id(self, key: str) -> str:
        if self.chance(0.8):
            return self.existing_id(key, self.delivered)
        return self.some_id(key)

    def cmd_xack(self) -> list[str]:
        key = self.key()
        ids = [self.pending_id(key) for _ in range(self.rng.randint(1, 4))]
        return ["XACK", key, self.group(key), *ids]

    def cmd_xpending(self) -> list[str]:
        key = self.key()
        args = ["XPENDING", key, self.group(key)]
        if self.chance(0.3):
            return args
        if self.chance(0.3):
            args += ["IDLE", "0"]
        args += [self.bound(key, True), self.bound(key, False), self.count()]
        if self.chance(0.4):
            args.append(self.consumer())
        return args

    def cmd_xclaim(self) -> list[str]:
        key = self.key()
        min_idle = "0" if self.chance(0.97) else "-5"
        ids = [self.pending_id(key) for _ in range(self.rng.randint(1, 4))]
        args = ["XCLAIM", key, self.group(key), self.consumer(), min_idle, *ids]
        if self.chance(0.15):
            args += ["IDLE", str(self.rng.randint(0, 100000))]
        if self.chance(0.1):
            args += ["TIME", str(self.rng.randint(1_000_000, 1_600_000_000_000))]
        if self.chance(0.2):
            args += ["RETRYCOUNT", str(self.rng.randint(0, 10))]
        if self.chance(0.2):
            args.append("FORCE")
        if self.chance(0.3):
            args.append("JUSTID")
        if self.chance(0.15):
            args += ["LASTID", self.some_id(key)]
        return args

    def cmd_xautoclaim(self) -> list[str]:
        key = self.key()
        r = self.rng.random()
        start = "0-0" if r < 0.4 else "-" if r < 0.5 else self.pending_id(key)
        args = ["XAUTOCLAIM", key, self.group(key), self.consumer(), "0", start]
        if self.chance(0.6):
            args += ["COUNT", self.count()]
        if self.chance(0.3):
            args.append("JUSTID")
        return args

    def cmd_xinfo_stream(self) -> list[str]:
        args = ["XINFO", "STREAM", self.key()]
        if self.chance(0.5):
            args.append("FULL")
            if self.chance(0.5):
                args += ["COUNT", str(self.rng.choice([0, 1, 3, 10, 25]))]
        return args

    def cmd_xinfo_groups(self) -> list[str]:
        return ["XINFO", "GROUPS", self.key()]

    def cmd_xinfo_consumers(self) -> list[str]:
        key = self.key()
        return ["XINFO", "CONSUMERS", key, self.group(key)]

    def cmd_del(self) -> list[str]:
        return ["DEL", *self.rng.sample(list(self.keys), self.rng.randint(1, 2))]

    def cmd_exists(self) -> list[str]:
        keys = [self.key() for _ in range(self.rng.randint(1, 3))]
        return ["EXISTS", *keys]

    # ------------------------------------------------------------------- model updates

    def observe(self, cmd: Command, reply: Any) -> None:
        """Learn IDs from a reply that both servers agreed on."""
        if isinstance(reply, ReplyError):
            return
        name = cmd[0].upper()
        if name == "XADD" and isinstance(reply, str):
            key = cmd[1]
            parsed = _parse_id(reply)
            if key in self.last and parsed is not None:
                self.last[key] = parsed
                self.ids[key].append(reply)
        elif name == "XSETID" and reply == "OK":
            parsed = _parse_id(cmd[2])
            if cmd[1] in self.last and parsed is not None:
                self.last[cmd[1]] = parsed
        elif name == "XGROUP" and cmd[2] in self.groups:
            sub = cmd[1].upper()
            if sub == "CREATE" and reply == "OK":
                self.groups[cmd[2]].add(cmd[3])
            elif sub == "DESTROY" and reply == 1:
                self.groups[cmd[2]].discard(cmd[3])
        elif name == "DEL":
            for k in cmd[1:]:
                if k in self.last:
                    self.groups[k].clear()
                    self.last[k] = (0, 0)
                    self.ids[k].clear()
                    self.delivered[k].clear()
        elif name == "XREADGROUP" and isinstance(reply, list):
            for stream in reply:
                key, entries = stream[0], stream[1]
                if key in self.delivered:
                    self.delivered[key].extend(e[0] for e in entries if isinstance(e, list))
                    del self.delivered[key][:-300]


# ------------------------------------------------------------------------- running


def generate(seed: int, profile_name: str, ref: Sender) -> list[Command]:
    """The command sequence of a run, regenerated from redis-server alone (db must be empty)."""
    profile = PROFILES[profile_name]
    gen = Generator(seed, profile)
    out: list[Command] = []
    for _ in range(profile.steps):
        cmd = gen.next_command(ref)
        out.append(cmd)
        gen.observe(cmd, ref(*cmd))
    return out


def _describe(error: AssertionError) -> str:
    """``Pair``'s assertion payload is ``(args, expected, actual)``; spell it out."""
    payload = error.args[0] if error.args else None
    if isinstance(payload, tuple) and len(payload) == 3:
        return f"  redis:    {payload[1]!r}\n  xstreams: {payload[2]!r}"
    return str(error)


def _as_json(cmds: Sequence[Command]) -> str:
    """A JSON array with one command per line (readable, and loadable by ``replay``)."""
    lines = ",\n".join(json.dumps(list(c), ensure_ascii=False) for c in cmds)
    return f"[\n{lines}\n]\n"


def _dump(history: Sequence[Command], directory: Path, label: str) -> Path:
    path = directory / f"random-sequence-{label}.json"
    path.write_text(_as_json(history))
    return path


@pytest.mark.redis
@pytest.mark.parametrize(("profile_name", "seed"), CASES, ids=[f"{p}-{s}" for p, s in CASES])
def test_random_sequence(profile_name: str, seed: int, pair: ExactPair, tmp_path: Path) -> None:
    """Each reply of a seeded random command sequence equals redis-server's."""
    profile = PROFILES[profile_name]
    gen = Generator(seed, profile)
    history: list[Command] = []
    for _ in range(profile.steps):
        cmd = gen.next_command(pair.resp)
        history.append(cmd)
        try:
            reply = pair(*cmd)
        except AssertionError as e:
            failure = _describe(e)
            break
        gen.observe(cmd, reply)
    else:
        failure = None
    if failure is not None:
        path = _dump(history, tmp_path, f"{profile_name}-{seed}")
        pytest.fail(
            f"seed={seed} profile={profile_name} step={len(history) - 1} "
            f"command={list(history[-1])!r}\n{failure}\n"
            f"sequence written to {path}; shrink it with "
            f"`python -m tests.differential.test_random_sequences minimize {path}`",
            pytrace=False,
        )
    # The run must have built real state, or it proves little.
    assert sum(1 for c in history if c[0] == "XADD") > profile.steps // 10


# --------------------------------------------------------------- replay and shrinking


def _same(cmd: Command, expected: Any, actual: Any) -> bool:
    if isinstance(actual, ReplyError) != isinstance(expected, ReplyError):
        return False
    try:
        return bool(mask(cmd, actual) == mask(cmd, expected))
    except AssertionError:  # a time field that is not a time
        return False


def first_mismatch(cmds: Sequence[Command], xs: Sender, ref: Sender) -> tuple[int, Any, Any] | None:
    """Runs ``cmds`` on both (flushed first); the first differing step, if any."""
    assert xs("FLUSHALL") == "OK"
    assert ref("FLUSHDB") == "OK"
    for i, cmd in enumerate(cmds):
        expected, actual = ref(*cmd), xs(*cmd)
        if not _same(cmd, expected, actual):
            return i, expected, actual
    return None


def minimize(cmds: list[Command], xs: Sender, ref: Sender) -> list[Command]:
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
            print(_as_json(cmds))
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
                print(_as_json(cmds))
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
        ref.close()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
