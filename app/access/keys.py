"""API keys: their format, their stored hash, and the ring of keys a running service knows.

A key is ``xs_<id>_<secret>``: the id finds the stored record in one dictionary look-up, the
secret (256 random bits) is compared with the stored SHA-256 in constant time. A slow password
hash would add nothing: the secret is not a password a person chose, it cannot be guessed, so
one fast hash is what GitHub and Stripe tokens use too. Only the hash is stored; the secret is
printed once, at creation.

The service keeps every key in a ``KeyRing`` it refreshes from the database every second or so
(``xstreams keys create`` and ``revoke`` write the database, possibly from another process), so
a new or revoked key takes effect without a restart; the ring tells its listeners which keys
went away (revoked, deleted or expired), and the SSE registry closes their open streams.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.access.grants import Grant
from app.access.rates import UNLIMITED, CredentialLimits

__all__ = ["KeyRecord", "KeyRing", "hash_secret", "new_key", "split_key"]

_KEY = re.compile(r"xs_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRecord:
    """One API key as stored: never its secret."""

    key_id: str
    name: str
    secret_hash: str
    grant: Grant
    created_at_ms: int
    expires_at_ms: int | None = None
    revoked_at_ms: int | None = None
    limits: CredentialLimits = UNLIMITED  # its own; else the settings' defaults
    prefix: str = ""  # its tenant prefix (app/access/prefix.py); "" for none

    def live(self, now_ms: int) -> bool:
        return self.revoked_at_ms is None and (
            self.expires_at_ms is None or now_ms < self.expires_at_ms
        )


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key() -> tuple[str, str, str]:
    """A fresh ``(key_id, secret, full key text)``."""
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return key_id, secret, f"xs_{key_id}_{secret}"


def split_key(text: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a key's text, None when it is not one."""
    m = _KEY.fullmatch(text)
    return (m.group(1), m.group(2)) if m else None


Listener = Callable[[set[str]], None]


class KeyRing:
    """The keys the service accepts, by id; replaced whole on each refresh."""

    def __init__(self, records: Iterable[KeyRecord] = ()) -> None:
        self._by_id: dict[str, KeyRecord] = {}
        self._listeners: list[Listener] = []
        self.loaded = False  # whether a refresh has happened (keys may exist in storage)
        self.replace(records)

    def __len__(self) -> int:
        return len(self._by_id)

    def on_gone(self, listener: Listener) -> None:
        """Call ``listener(key_ids)`` when keys are revoked, deleted or expire."""
        self._listeners.append(listener)

    def replace(self, records: Iterable[KeyRecord], now_ms: int | None = None) -> None:
        """Take the stored keys as they are now; tell listeners which live ones went away."""
        before = self._by_id
        self._by_id = {r.key_id: r for r in records}
        gone = {
            key_id
            for key_id, old in before.items()
            if old.revoked_at_ms is None
            and (
                (new := self._by_id.get(key_id)) is None
                or (now_ms is not None and not new.live(now_ms))
            )
        }
        if gone:
            for listener in self._listeners:
                listener(gone)

    def records(self) -> list[KeyRecord]:
        return sorted(self._by_id.values(), key=lambda r: r.name)

    def find(self, text: str, now_ms: int) -> KeyRecord | None:
        """The live key whose text this is, or None (unknown, wrong secret, revoked, expired)."""
        parts = split_key(text)
        if parts is None:
            return None
        record = self._by_id.get(parts[0])
        if record is None:
            return None
        if not hmac.compare_digest(hash_secret(parts[1]), record.secret_hash):
            return None
        return record if record.live(now_ms) else None
