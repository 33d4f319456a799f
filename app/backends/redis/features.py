"""What the Redis server behind the backend can do: its version, learnt once at start.

The stream commands Redis added after 7.0 are passed through unchanged to a server that has
them; on an older one the backend answers them itself, by a Lua script over 7.0's commands
where that gives the same result exactly (newer.py), else with ``NotAvailable`` naming the
version needed. The decision is a pure function of the version (``Features``), so it is
tested with versions alone. A server that does not tell its version (INFO refused by an ACL)
is served as the oldest: every newer command by script or refused.

In a cluster the version is the lowest of the masters' (a command must work on every slot),
and so is ``stream-node-max-entries`` (the default LIMIT of ``~``), while the largest is the
bound on the entries of one node.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.backends.errors import NotAvailable

Version = tuple[int, int, int]

# The release that added each: XDELEX, XACKDEL and the KEEPREF|DELREF|ACKED policies of
# XADD / XTRIM in 8.2; XREADGROUP ... CLAIM in 8.4; XADD IDMP / IDMPAUTO and XCFGSET in 8.6;
# XIDMPRECORD in 8.6.2; XNACK in 8.8.
REF_POLICIES: Version = (8, 2, 0)
READ_CLAIM: Version = (8, 4, 0)
IDMP: Version = (8, 6, 0)
IDMP_RECORD: Version = (8, 6, 2)
XNACK: Version = (8, 8, 0)


def parse_version(text: str) -> Version:
    """``redis_version`` of INFO server (``7.0.15``, ``8.6.3``, ``255.255.255`` for an
    unstable build); a part that is not a number counts 0."""
    parts = [int(p) if p.isdigit() else 0 for p in text.strip().split(".")[:3]]
    parts += [0] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def version_text(v: Version) -> str:
    return ".".join(map(str, v))


def info_field(info: str, name: str) -> str | None:
    """A field of an INFO reply (``name:value`` lines)."""
    for line in info.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


@dataclass(frozen=True, slots=True)
class Features:
    """The server's version and its stream nodes' size (``stream-node-max-entries``: the
    lowest and the highest over the masters; None when CONFIG GET is refused)."""

    version: Version
    node_entries: tuple[int, int] | None = (100, 100)

    def has(self, needed: Version) -> bool:
        return self.version >= needed

    @property
    def ref_policies(self) -> bool:
        return self.has(REF_POLICIES)

    @property
    def read_claim(self) -> bool:
        return self.has(READ_CLAIM)

    @property
    def idmp(self) -> bool:
        return self.has(IDMP)

    @property
    def xnack(self) -> bool:
        return self.has(XNACK)

    def refuse(self, what: str, needed: Version) -> NotAvailable:
        """The error for what this server cannot do and no script can do exactly."""
        this = version_text(self.version) if any(self.version) else "of an unknown version"
        version = f"{needed[0]}.{needed[1]}" + (f".{needed[2]}" if needed[2] else "")
        return NotAvailable(f"ERR {what} needs Redis {version} or newer (this server is {this})")

    def delref_exact(self, removed: int, approx: bool, limit: int) -> bool:
        """Whether a DELREF trim removing ``removed`` entries (the oldest live ones) is
        done exactly by an exact XTRIM: always without ``~``; with ``~``, Redis trims
        inside a node too but stops before a node that would take it past ``limit`` (0:
        none), so only when ``removed`` plus a whole node stays within it."""
        if not approx or not limit:
            return True
        if self.node_entries is None or self.node_entries[1] <= 0:
            return False  # nodes of any size: the limit may cut anywhere
        return removed + self.node_entries[1] <= limit

    @property
    def default_limit(self) -> int:
        """The LIMIT Redis gives ``~`` without one (``approx_limit``)."""
        entries = self.node_entries[0] if self.node_entries is not None else 0
        limit = 100 * entries
        if limit <= 0 or limit > 2**30:
            limit = 10000
        return limit
