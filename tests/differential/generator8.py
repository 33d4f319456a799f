"""The random runs' generator with the commands Redis added after 7.0 that xstreams takes:
XDELEX, XACKDEL, KEEPREF / DELREF / ACKED on XADD and XTRIM trims, XREADGROUP ... CLAIM,
XCFGSET and XADD's IDMP / IDMPAUTO (``test_redis8_random``, against redis-server 8.6).

Two rules keep the runs comparable with a server whose other commands moved on since 7.0:

- Every consumer exists from the moment its group does (XGROUP CREATECONSUMER after each
  XGROUP CREATE, and no XGROUP DELCONSUMER): redis-server 7.2 and later create a consumer on
  a read that serves nothing, xstreams keeps 7.0's XREADGROUP, which does not.
- No ``+`` as an XREAD / XREADGROUP ID (``Generator8._streams``), and no XSETID: on an
  emptied stream redis-server 8.6 refuses an ID below max-deleted-entry-id that 7.0
  (and xstreams) accepts.
- IDMP / IDMPAUTO only on XADDs with the generator's explicit IDs: refused alike (IDMP takes
  only ``*``, whose IDs come from each server's clock), in the order of the errors they meet;
  the appends and repeats themselves are compared in ``test_redis8_idmp``.
- A CLAIM read with min-idle-time 0 has no COUNT: which entries share a millisecond of
  delivery time is the wall clock's business, so a COUNT could cut the claim at different
  entries on the two servers; without one the claimed set is the same and
  ``sort_claims`` compares it in ID order. (The order itself is compared by
  ``test_redis8_claim``, with deliveries far enough apart.)
"""

from __future__ import annotations

from typing import Any

from tests.differential.generator import _BASE_WEIGHTS, CONSUMERS, Command, Generator, Profile
from tests.differential.redis8 import Pair8, has_idmp, is_claim_read, normalize8

POLICIES = ("KEEPREF", "DELREF", "ACKED")

PROFILE8 = Profile(
    "redis8",
    160,
    ("s1", "s2"),
    {
        **_BASE_WEIGHTS,
        "XADD": 30,
        "XDEL": 3,
        "XDELEX": 7,
        "XACKDEL": 6,
        "XTRIM": 7,
        "XSETID": 0,
        "XGROUP DELCONSUMER": 0,
        "XREADGROUP": 12,
        "XACK": 3,
        "XCLAIM": 3,
        "XAUTOCLAIM": 2,
        "CONFIG SET": 0.7,
        "XCFGSET": 1,
    },
    fat=0.03,
    cut=10,
    trim_p=0.35,
    nodes=((100, 4096), (5, 128), (3, 64), (2, 0), (4, 300), (7, 1024), (1, 0)),
    xdel_run=0.3,
)


class Generator8(Generator):
    def _streams(self, group: bool, keys: list[str] | None = None) -> list[str]:
        """As the 7.0 runs, but no ``+`` ID: Redis 7.4 gave it a meaning for XREAD (the
        last entry) and its own error for XREADGROUP; 7.0, and xstreams, refuse it as an
        invalid ID."""
        args = super()._streams(group, keys)
        return ["x" if a == "+" else a for a in args]

    def policy(self) -> list[str]:
        r = self.rng.random()
        if r < 0.25:
            return []
        if r < 0.98:
            word = self.rng.choice(POLICIES)
            return [word if self.chance(0.9) else word.lower()]
        return [self.rng.choice(["FOO", "KEEPREF", "ACKED"]), self.rng.choice(POLICIES)]

    def trim_args(self, key: str) -> list[str]:
        args = super().trim_args(key)
        if self.chance(0.8):
            policy = self.policy()
            at = self.rng.randint(1, len(args)) if self.chance(0.15) else len(args)
            args[at:at] = policy
        return args

    def cmd_xadd(self) -> list[str]:
        args = super().cmd_xadd()
        if self.chance(0.06):  # before the ID: refused, whichever error comes first
            producer = self.rng.choice(["p", "q", ""])
            pair = ["IDMPAUTO", producer] if self.chance(0.3) else ["IDMP", producer, "i"]
            args[2:2] = pair * (2 if self.chance(0.1) else 1)  # first option: before the ID
        return args

    def cmd_xcfgset(self) -> list[str]:
        args = ["XCFGSET", self.key()]
        if self.chance(0.8):
            args += ["IDMP-DURATION", self.rng.choice(["1", "100", "300", "0", "86401", "x"])]
        if self.chance(0.6):
            args += ["IDMP-MAXSIZE", self.rng.choice(["1", "100", "5", "0", "10001"])]
        if self.chance(0.05):
            args += self.rng.choice([["IDMP-MAXSIZE", "5"], ["FOO", "1"], ["IDMP-DURATION"]])
        return args

    def ids_block(self, key: str, pending: bool) -> list[str]:
        ids = [
            self.pending_id(key) if pending and self.chance(0.7) else self.some_id(key)
            for _ in range(self.rng.randint(1, 5))
        ]
        if self.chance(0.1):
            ids.append(ids[0])
        if self.chance(0.02):
            ids.append("bad")
        numids = str(len(ids))
        if self.chance(0.03):
            numids = self.rng.choice(["0", "-1", "x", str(len(ids) + 1)])
        block = ["IDS", numids, *ids]
        if self.chance(0.03):
            block = ["IDS", "1", self.some_id(key), *block]
        return block

    def cmd_xdelex(self) -> list[str]:
        key = self.key()
        block = self.ids_block(key, self.chance(0.5))
        policy = self.policy()
        return ["XDELEX", key, *(policy + block if self.chance(0.7) else block + policy)]

    def cmd_xackdel(self) -> list[str]:
        key = self.key()
        block = self.ids_block(key, True)
        policy = self.policy()
        args = policy + block if self.chance(0.7) else block + policy
        return ["XACKDEL", key, self.group(key), *args]

    def cmd_xreadgroup(self) -> list[str]:
        args = super().cmd_xreadgroup()
        if not self.chance(0.45):
            return args
        streams = args.index("STREAMS")
        r = self.rng.random()
        if r < 0.75:
            claim = "0"
            if "COUNT" in args[:streams]:
                at = args.index("COUNT")
                del args[at : at + 2]
                streams -= 2
        elif r < 0.97:
            claim = "1000000000"
        else:
            claim = self.rng.choice(["-1", "x", "9223372036854775808"])
        args[streams:streams] = ["CLAIM", claim]
        return args

    def observe(self, cmd: Command, reply: Any) -> None:
        super().observe(cmd, reply)
        if cmd[0].upper() == "XGROUP" and cmd[1].upper() == "CREATE" and reply == "OK":
            self.setup += [("XGROUP", "CREATECONSUMER", cmd[2], cmd[3], c) for c in CONSUMERS]


def sort_claims(args: tuple[Any, ...], reply: Any) -> Any:
    """A CLAIM read's entries in ID order (see the module docstring)."""
    if not is_claim_read(args) or not isinstance(reply, list):
        return reply
    key = lambda e: tuple(int(part) for part in e[0].split("-"))  # noqa: E731
    return [[stream[0], sorted(stream[1], key=key)] for stream in reply]


class RandomPair8(Pair8):
    """``Pair8`` comparing CLAIM reads as sets (``sort_claims``)."""

    def compare(self, args: tuple[Any, ...], expected: Any, actual: Any) -> Any:
        expected = normalize8(args, expected, has_idmp(actual))  # as ``Pair8.compare``
        super().compare(args, sort_claims(args, expected), sort_claims(args, actual))
        return actual
