"""What a credential may do: four verbs, each granted on stream-name globs, and metrics.

``read`` (ranges, XREAD, XINFO, SSE tails), ``consume`` (group reads, acks, claims, pending:
what a worker needs, without appending), ``write`` (XADD, XDEL, XTRIM, XSETID, group and
consumer admin) and ``admin`` (the whole keyspace: KEYS, DBSIZE, FLUSHALL, managing keys; it
implies the other three on every stream). ``metrics`` (scraping ``/metrics``) is, like
``admin``, held or not rather than on globs: the figures are the whole service's. A
monitoring system gets a key with ``metrics`` alone, which reads no stream.

Globs are Redis's (``*``, ``?``, ``[a-z]``, ``\\`` escapes), matched by the engine's one
glob matcher, as ACL key patterns are.

The verbs are independent: a producer may append without reading, a dashboard may read without
writing. A grant is a plain value: API keys store it as JSON, a JWT carries it in a claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.engine.glob import escape, glob_match

__all__ = ["ADMIN", "Grant", "GrantError", "Verb"]


class Verb(StrEnum):
    READ = "read"
    CONSUME = "consume"
    WRITE = "write"
    ADMIN = "admin"
    METRICS = "metrics"  # GET /metrics: the service's figures, no stream content


class GrantError(ValueError):
    """A grant document (JWT claim, stored key) that is not of the documented shape."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    read: tuple[str, ...] = ()
    consume: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    admin: bool = False
    metrics: bool = False

    def globs(self, verb: Verb) -> tuple[str, ...]:
        if verb is Verb.READ:
            return self.read
        if verb is Verb.CONSUME:
            return self.consume
        if verb is Verb.WRITE:
            return self.write
        return ()

    def has(self, verb: Verb) -> bool:
        """Whether the verb is granted on anything at all."""
        if verb is Verb.METRICS:
            return self.admin or self.metrics
        return self.admin or bool(self.globs(verb))

    def allows(self, verb: Verb, key: str) -> bool:
        """Whether ``verb`` is granted on the stream ``key``."""
        if self.admin:
            return True
        return any(glob_match(pattern, key) for pattern in self.globs(verb))

    def within(self, prefix: str) -> Grant:
        """This grant relative to a tenant prefix (app/access/prefix.py): every glob gets the
        prefix in front, its glob characters escaped, so ``orders*`` reaches ``prefix`` +
        ``orders*`` and nothing outside the prefix. ``admin`` (the whole keyspace) has no
        meaning inside a prefix: such a grant is refused (``GrantError``)."""
        if not prefix:
            return self
        if self.admin:
            raise GrantError("a credential with a key prefix cannot hold admin")
        head = escape(prefix)
        return Grant(
            read=tuple(head + g for g in self.read),
            consume=tuple(head + g for g in self.consume),
            write=tuple(head + g for g in self.write),
            metrics=self.metrics,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "read": list(self.read),
            "consume": list(self.consume),
            "write": list(self.write),
            "admin": self.admin,
            "metrics": self.metrics,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Grant:
        """A grant from ``{"read": [globs], "consume": [...], "write": [...], "admin": bool,
        "metrics": bool}`` (every member optional); anything else raises ``GrantError``."""
        if not isinstance(doc, Mapping):
            raise GrantError("a grant must be an object of verbs")
        unknown = set(doc) - {"read", "consume", "write", "admin", "metrics"}
        if unknown:
            raise GrantError(f"unknown verbs in grant: {', '.join(sorted(map(str, unknown)))}")
        flags = {name: doc.get(name, False) for name in ("admin", "metrics")}
        for name, value in flags.items():
            if not isinstance(value, bool):
                raise GrantError(f"'{name}' must be true or false")
        return cls(
            read=_globs(doc, "read"),
            consume=_globs(doc, "consume"),
            write=_globs(doc, "write"),
            admin=flags["admin"],
            metrics=flags["metrics"],
        )

    @classmethod
    def of(
        cls,
        *,
        read: Iterable[str] = (),
        consume: Iterable[str] = (),
        write: Iterable[str] = (),
        admin: bool = False,
        metrics: bool = False,
    ) -> Grant:
        return cls(
            read=tuple(read),
            consume=tuple(consume),
            write=tuple(write),
            admin=admin,
            metrics=metrics,
        )


def _globs(doc: Mapping[str, Any], verb: str) -> tuple[str, ...]:
    value = doc.get(verb, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise GrantError(f"'{verb}' must be a list of non-empty glob strings")
    return tuple(value)


ADMIN = Grant(admin=True)
