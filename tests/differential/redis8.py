"""Comparing xstreams with redis-server 8.x: ``Pair8``, an ``ExactPair`` that first drops
what redis-server added after 7.0 for other features than the ones xstreams takes from it.

xstreams keeps Redis 7.0's replies for the commands 7.0 had, and takes from Redis 8 only
XDELEX, XACKDEL, the reference policies (KEEPREF / DELREF / ACKED) and XREADGROUP ... CLAIM.
An 8.6 reply therefore carries fields xstreams does not have, which are removed before the
comparison (never the other way round: a field xstreams sends that redis-server does not
fails the test):

- XINFO STREAM: the idempotent-producer fields (``idmp-*``, ``pids-tracked``, ``iids-*``)
  of a stream without IDMP state, which redis-server 8.6 prints (its defaults) and xstreams
  leaves out, keeping 7.0's reply. When xstreams's reply has them (XADD IDMP or XCFGSET gave
  the stream IDMP state) they are compared;
- XINFO STREAM FULL consumers: ``active-time``; XINFO CONSUMERS: ``inactive`` (Redis 7.2);
- ``lag`` and ``entries-read`` (XINFO STREAM FULL, XINFO GROUPS): Redis 7.2 and later
  count them otherwise once a trim passed a group's last-delivered ID (after a plain
  XTRIM MAXLEN, no policy, 8.6 gives lag 1 where 7.0, and xstreams, give 3; after a
  plain XTRIM MINID ~ and an XREADGROUP, entries-read 3 where 7.0 gives 2), so both are
  masked here. The 7.0 suite compares them.

The idle time of each entry of a CLAIM read (its third item) is wall-clock and masked, as the
other idle times are (``support.mask``); its delivery count is compared.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import ReplyError
from tests.differential.exact import ExactPair, RespClient
from tests.differential.support import MASK, MASKED_KEYS

# Keys redis-server 8.x adds to XINFO replies for features xstreams does not take.
ADDED_AFTER_7 = frozenset(
    {"pids-tracked", "iids-tracked", "iids-added", "iids-duplicates", "active-time", "inactive"}
)
# Masked besides ``support.MASKED_KEYS`` (see the module docstring); they may be nil.
MASKED_COUNTERS = frozenset({"lag", "entries-read"})


IDMP_KEYS = frozenset(
    {"idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added"}
    | {"iids-duplicates"}
)


def _added(key: Any, keep_idmp: bool = False) -> bool:
    if keep_idmp and key in IDMP_KEYS:
        return False
    return isinstance(key, str) and (key in ADDED_AFTER_7 or key.startswith("idmp-"))


def has_idmp(value: Any) -> bool:
    """Whether an XINFO STREAM reply carries the IDMP fields."""
    return isinstance(value, list) and "idmp-duration" in value[::2]


def drop_added(value: Any, keep_idmp: bool = False) -> Any:
    """``value`` without the keys of ``ADDED_AFTER_7`` in any flat key/value array in it
    (the IDMP fields kept if ``keep_idmp``), and with ``lag`` and ``entries-read`` masked."""
    if not isinstance(value, list):
        return value
    if len(value) >= 2 and len(value) % 2 == 0 and value[0] in ("length", "name"):
        out: list[Any] = []
        for key, val in zip(value[::2], value[1::2], strict=True):
            if key in MASKED_COUNTERS:
                out += [key, MASK]
            elif not _added(key, keep_idmp):
                out += [key, drop_added(val)]
        return out
    return [drop_added(v) for v in value]


def is_claim_read(args: tuple[Any, ...]) -> bool:
    upper = [str(a).upper() for a in args]
    if not upper or upper[0] != "XREADGROUP" or "CLAIM" not in upper:
        return False
    return upper.index("CLAIM") < upper.index("STREAMS") if "STREAMS" in upper else True


def mask_claim_idle(reply: Any) -> Any:
    """A CLAIM read's reply with each 4-item entry's idle time masked."""
    if not isinstance(reply, list):
        return reply
    out = []
    for stream in reply:
        key, entries = stream
        out.append([key, [[*e[:2], MASK, *e[3:]] if len(e) == 4 else e for e in entries]])
    return out


def normalize8(args: tuple[Any, ...], reply: Any, keep_idmp: bool = False) -> Any:
    """A reply of either server in the form the two are compared in."""
    if isinstance(reply, ReplyError):
        return reply
    name = str(args[0]).upper() if args else ""
    if name == "XINFO":
        return drop_added(reply, keep_idmp)
    if is_claim_read(args):
        return mask_claim_idle(reply)
    return reply


class Pair8(ExactPair):
    """xstreams beside redis-server 8.x: replies compared after ``normalize8``."""

    def __init__(self, xs: Any, resp: RespClient, masked: frozenset[str] = MASKED_KEYS) -> None:
        super().__init__(xs, None, masked, resp=resp)

    def compare(self, args: tuple[Any, ...], expected: Any, actual: Any) -> Any:
        keep = has_idmp(actual)  # xstreams shows them only for a stream with IDMP state
        super().compare(args, normalize8(args, expected, keep), normalize8(args, actual, keep))
        return actual

    def config(self, entries: int, size: int = 4096) -> None:
        """The node limits on both sides (stream-node-max-entries / -bytes)."""
        for name, value in (("stream-node-max-entries", entries), ("stream-node-max-bytes", size)):
            self("CONFIG", "SET", name, str(value))
