"""Tenant prefixes: a credential bound to a key prefix (``tenant-a:``) lives inside it.

Every stream name the credential sends gets the prefix (``inward``); every name it is shown
loses it (``outward``), so one application's code runs unchanged per tenant, as S2's automatic
prefixing does. The credential's grant is relative to the prefix: ``Grant.within`` turns the
glob ``orders*`` of a key with prefix ``tenant-a:`` into ``tenant-a:orders*`` (the prefix's
own glob characters escaped), so the one permission check (``app.access.check``) decides on
full names and never needs to know about prefixes.

This module is the only place the mapping is written. Surfaces call it: REST and SSE on the
path's stream, the command endpoint on each line (``TenantPrefix.argv``: the key positions of
the command table, ``key_positions``, rewritten; SCAN's MATCH confined to the prefix) and on
each reply (``TenantPrefix.reply``: XREAD / XREADGROUP's stream names, SCAN's keys), Durable
Streams on the path's key.

A line whose keys cannot be found position by position (KEYS, INFO, FLUSHALL, a command whose
key positions the table does not describe) is refused (``NotForPrefix``), never run
unprefixed. Names are opaque: ``../x``, ``*`` or the empty name become ``tenant-a:../x``,
``tenant-a:*`` (a key, not a pattern) and ``tenant-a:``, all inside the prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.commands.table import Access, Command, key_positions
from app.engine.errors import CommandError
from app.engine.glob import escape
from app.engine.replies import CommandReply, ScanPage, StreamRead

__all__ = ["NO_PREFIX", "NotForPrefix", "PrefixError", "TenantPrefix"]

MAX_PREFIX = 200  # characters: a prefix is a short namespace, not a key


class NotForPrefix(CommandError):
    """A command the mapping cannot apply to safely, for a credential with a prefix."""

    @classmethod
    def command(cls, name: str) -> NotForPrefix:
        return cls(
            f"ERR command not allowed for a credential with a key prefix: "
            f"'{name.replace('|', ' ')}' names no key the prefix can be applied to"
        )


class PrefixError(ValueError):
    """A prefix that is not of the documented shape (a key's, a JWT claim's)."""


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is a valid one: 1 to 200 characters, no NUL."""
    if not isinstance(prefix, str) or not prefix:
        raise PrefixError("a prefix must be a non-empty string")
    if len(prefix) > MAX_PREFIX or "\0" in prefix:
        raise PrefixError(f"a prefix must be at most {MAX_PREFIX} characters, without NUL")
    return prefix


@dataclass(frozen=True, slots=True)
class TenantPrefix:
    """The prefix of one credential; ``""`` (``NO_PREFIX``) maps every name to itself."""

    text: str = ""

    def __bool__(self) -> bool:
        return bool(self.text)

    def inward(self, name: str) -> str:
        """The server's name for the credential's ``name``."""
        return self.text + name

    def outward(self, name: str) -> str:
        """The credential's name for the server's ``name`` (one of its own: ``owns``)."""
        return name[len(self.text) :] if name.startswith(self.text) else name

    def owns(self, name: str) -> bool:
        return name.startswith(self.text)

    def glob(self, pattern: str) -> str:
        """A pattern over the credential's names as one over the server's."""
        return escape(self.text) + pattern

    def unglob(self, pattern: str) -> str:
        """``glob``'s inverse: a server pattern as the credential wrote it."""
        head = escape(self.text)
        return pattern[len(head) :] if pattern.startswith(head) else pattern

    def argv(self, cmd: Command, argv: list[str]) -> list[str]:
        """A command line with its keys prefixed (the table's key positions); SCAN's MATCH
        confined to the prefix. ``NotForPrefix`` for a line that cannot be mapped."""
        if not self.text:
            return argv
        if cmd.access is Access.LIST:
            return self._scan(argv)
        positions = key_positions(cmd.keys, argv)
        if positions is None:
            raise NotForPrefix.command(cmd.name)
        if not positions:
            return argv
        out = list(argv)
        for i in positions:
            out[i] = self.text + out[i]
        return out

    def _scan(self, argv: list[str]) -> list[str]:
        """SCAN cursor [MATCH p] [COUNT n] [TYPE t]: every MATCH prefixed (Redis takes the last
        one), or a MATCH of the whole prefix added."""
        out = list(argv)
        matched = False
        i = 2
        while i + 1 < len(out):
            if out[i].lower() == "match":
                out[i + 1] = self.glob(out[i + 1])
                matched = True
            i += 2
        if not matched:
            out += ["MATCH", self.glob("*")]
        return out

    def reply(self, cmd: Command | None, reply: CommandReply) -> CommandReply:
        """A reply with the server's names turned into the credential's: XREAD / XREADGROUP's
        stream names, SCAN's keys (only the prefix's own, whatever the backend answered)."""
        if not self.text or cmd is None:
            return reply
        if isinstance(reply, ScanPage):
            return ScanPage(reply.cursor, self.names(reply.keys))
        if cmd.access is Access.LIST and isinstance(reply, list) and len(reply) == 2:
            return [reply[0], self.names(list(reply[1]))]
        if cmd.name in ("xread", "xreadgroup") and isinstance(reply, list):
            return [self._read(r) for r in reply]
        return reply

    def _read(self, r: CommandReply) -> CommandReply:
        """One stream of an XREAD reply: the engine's ``StreamRead`` or a server's pair."""
        if isinstance(r, StreamRead):
            return StreamRead(self.outward(r.key), r.entries)
        if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str):
            return [self.outward(r[0]), r[1]]
        if isinstance(r, list) and len(r) == 2 and isinstance(r[0], bytes):
            raw = self.text.encode("utf-8", "surrogateescape")
            return [r[0][len(raw) :] if r[0].startswith(raw) else r[0], r[1]]
        return r

    def names(self, keys: list[str]) -> list[str]:
        """The keys of a listing that are the credential's, as it names them."""
        n = len(self.text)
        return [k[n:] for k in keys if k.startswith(self.text)]

    def error(self, text: str) -> str:
        """An error text that quotes a key (NOGROUP's ``No such key 'k'``) with the key as
        the credential names it."""
        return text.replace(f"'{self.text}", "'") if self.text else text


NO_PREFIX = TenantPrefix()
