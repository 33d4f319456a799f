"""The command generator of the randomized differential runs (``test_random_sequences``,
``test_walks``): a seeded RNG and a small model of what the replies showed.

Reproducibility: a run is fully determined by its seed and profile. The generator only ever
looks at reply parts that are independent of the wall clock and that both servers gave
alike (plus ``XLEN`` probes of redis-server), so the same seed produces the same commands
every time. Nothing uses ``*`` IDs or idle thresholds other than 0.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.conftest import ReplyError

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
    # Node limits (stream-node-max-entries, stream-node-max-bytes) a run picks one of and
    # sets with CONFIG SET first; empty: the server's, untouched (it is shared).
    nodes: tuple[tuple[int, int], ...] = ()
    # Probability that an XDEL takes a run of consecutive recent IDs (a node's tail).
    xdel_run: float = 0.0


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
    # Issue 23's blind spot: small nodes (set per run, on a redis-server of the run's own),
    # emptied by XDEL runs and exact or `~` trims (MAXLEN and MINID, LIMIT), mixed field
    # names, deliveries of entries that then go. Short runs, many of them (``test_walks``).
    "tombstones": Profile(
        "tombstones",
        120,
        ("s1", "s2"),
        {
            **_BASE_WEIGHTS,
            "XADD": 30,
            "XDEL": 10,
            "XTRIM": 8,
            "XSETID": 1,
            "XRANGE": 1.5,
            "XREVRANGE": 1,
            "XREAD": 1,
            "XLEN": 0.3,
            "XGROUP CREATE": 3,
            "XGROUP SETID": 1.5,
            "XGROUP DESTROY": 0.5,
            "XGROUP CREATECONSUMER": 1,
            "XGROUP DELCONSUMER": 0.7,
            "XREADGROUP": 9,
            "XACK": 3,
            "XPENDING": 1,
            "XCLAIM": 3,
            "XAUTOCLAIM": 4,
            "XINFO STREAM": 0.5,
            "XINFO GROUPS": 0.3,
            "XINFO CONSUMERS": 0.3,
            "DEL": 0.3,
            "EXISTS": 0.3,
            "CONFIG SET": 0.7,
        },
        fat=0.03,
        cut=8,
        trim_p=0.3,
        nodes=((100, 4096), (5, 128), (3, 64), (2, 0), (0, 96), (4, 300), (7, 1024), (1, 0)),
        xdel_run=0.35,
    ),
}

NODE_PARAMETERS = ("stream-node-max-entries", "stream-node-max-bytes")
# Commands that change nothing: no read of their keys follows them.
READ_ONLY = frozenset({"XRANGE", "XREVRANGE", "XREAD", "XLEN", "XINFO", "XPENDING", "EXISTS"})


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
        # The run opens by setting its node limits (when the profile has some) and creating
        # a couple of groups per stream, then goes random.
        self.setup: list[Command] = []
        if profile.nodes:
            entries, size = self.rng.choice(profile.nodes)
            self.setup += [
                ("CONFIG", "SET", NODE_PARAMETERS[0], str(entries)),
                ("CONFIG", "SET", NODE_PARAMETERS[1], str(size)),
            ]
        self.setup += [
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
        known = self.ids.get(key) or []
        if known and self.chance(self.profile.xdel_run):
            # A run of consecutive IDs near the end: a node's tail, or all of a small node.
            end = len(known) - self.rng.randint(0, min(len(known) - 1, 6))
            return ["XDEL", key, *known[max(0, end - self.rng.randint(1, 5)) : end]]
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

    def cmd_config_set(self) -> list[str]:
        """A new stream-node-max-entries in the middle of a run: only later appends follow
        it. (Not stream-node-max-bytes: lowering it under an open node can crash
        redis-server 7.0.15 itself, e.g. 128 then 100 bytes, an XADD, then XRANGE.)"""
        return ["CONFIG", "SET", NODE_PARAMETERS[0], str(self.rng.choice([0, 1, 2, 3, 5, 100]))]

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


def touched(cmd: Command) -> list[str]:
    """The keys a command may have changed (none for a read)."""
    name = cmd[0].upper()
    if name in READ_ONLY or name == "CONFIG":
        return []
    if name == "DEL":
        return list(dict.fromkeys(cmd[1:]))
    if name == "XGROUP":
        return [cmd[2]] if len(cmd) > 2 else []
    if name == "XREADGROUP":
        upper = [a.upper() for a in cmd]
        if "STREAMS" not in upper:
            return []
        rest = cmd[upper.index("STREAMS") + 1 :]
        return list(dict.fromkeys(rest[: len(rest) // 2]))
    return [cmd[1]] if len(cmd) > 1 else []
