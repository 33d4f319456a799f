"""Service limits on the work one command may ask for: not Redis rules, the server's own.

redis-server answers ``XRANGE s - +`` on a stream of millions of entries, holding its one
thread while it builds the reply; xstreams shares its one event loop with every HTTP client,
so a reply is bounded. A command that would go past a limit is refused whole with an ``ERR``
that says which limit and how to stay within it, before it changes anything. 0 means no limit
(the engine's default; the app sets them from ``Settings``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from app.engine.errors import CommandError, TooLarge, TooMany
from app.engine.rdbio import TooLarge as PayloadTooLarge


@dataclass(frozen=True, slots=True)
class Limits:
    # Keys one XREAD / XREADGROUP may name (a blocked read parks one waiter per key).
    read_keys: int = 0
    # Entries one reply may hold: XRANGE, XREVRANGE, XREAD, XREADGROUP, XPENDING (extended),
    # XAUTOCLAIM and XINFO STREAM FULL (its entries and each PEL).
    reply_entries: int = 0
    # Bytes of one RESTORE payload, and of what its strings expand to (LZF expands up to
    # ~100x): decoding runs on the event loop, and its work follows the expanded bytes. DUMP
    # answers no more than RESTORE takes, so encoding is bounded alike.
    restore_bytes: int = 0
    # Entries of one node of a RESTORE payload, deleted ones included: Redis's nodes hold
    # 100 (stream-node-max-entries), and every later command on a node walks it.
    restore_node_entries: int = 0
    # Consumer groups one stream may hold, and consumers one group may hold: XINFO GROUPS,
    # XINFO CONSUMERS and XINFO STREAM FULL list them all, with no COUNT that bounds them.
    stream_groups: int = 0
    group_consumers: int = 0

    def check_restore(self, size: int) -> None:
        if self.restore_bytes and size > self.restore_bytes:
            raise CommandError.err(
                f"RESTORE payload of {size} bytes: at most {self.restore_bytes} are allowed "
                "(max_restore_bytes)"
            )

    @property
    def restore_expanded(self) -> int:
        return self.restore_bytes

    def restore_refusal(self, e: PayloadTooLarge) -> CommandError:
        """RESTORE's answer to a payload that decodes past a bound: Redis's "Bad data format"
        (what a client migrating keys already handles), then which limit and its value."""
        if e.what == "node_entries":
            detail = (
                f"a node holds more than {e.limit} entries, deleted ones included "
                "(max_restore_node_entries)"
            )
        else:
            detail = f"the payload expands past {e.limit} bytes (max_restore_bytes)"
        return CommandError.err(f"Bad data format: {detail}")

    def dump_refusal(self) -> CommandError:
        """DUMP of a stream whose payload would pass the RESTORE limit: encoding holds the
        loop as long as decoding would, and DUMP needs only read access."""
        return TooLarge.err(
            f"DUMP payload would be larger than {self.restore_bytes} bytes (max_restore_bytes)"
        )

    def check_read_keys(self, command: str, n: int) -> None:
        if self.read_keys and n > self.read_keys:
            raise TooLarge.err(
                f"too many keys: {command.upper()} names {n} streams, at most "
                f"{self.read_keys} are allowed (max_read_keys)"
            )

    def reply_cap(self, count: int | None, keys: int = 1) -> int | None:
        """How many entries to look at to tell whether a reply fits: None when ``count``
        already bounds it within the limit, else one more than the limit."""
        if not self.reply_entries:
            return None
        if count and count * keys <= self.reply_entries:
            return None
        return self.reply_entries + 1

    def past(self, count: int) -> bool:
        """Whether a reply that holds up to ``count`` entries (0: no bound) could pass the
        limit, so the command must look before it answers (XAUTOCLAIM, XINFO STREAM FULL)."""
        return bool(self.reply_entries) and (count == 0 or count > self.reply_entries)

    def too_large(self, command: str, hint: str | None = None) -> CommandError:
        hint = hint or f"read it in pages with COUNT {self.reply_entries} or less"
        return TooLarge.err(
            f"{command.upper()} reply would hold more than {self.reply_entries} entries "
            f"(max_reply_entries): {hint}"
        )

    def check_listing(self, command: str, rows: int) -> None:
        """XINFO GROUPS / CONSUMERS / STREAM FULL list every group (and consumer) whatever
        COUNT says, as Redis does: refused whole past ``max_reply_entries`` rows."""
        if self.reply_entries and rows > self.reply_entries:
            raise self.listing_too_large(command)

    def listing_too_large(self, command: str) -> CommandError:
        """The refusal of a listing past ``max_reply_entries`` rows (``check_listing``)."""
        return self.too_large(command, LISTING_HINT)

    def check_new_group(self, key: str, groups: int) -> None:
        """Refuse a group more on a stream that holds ``groups`` (XGROUP CREATE)."""
        if self.stream_groups and groups >= self.stream_groups:
            raise self.too_many_groups(key)

    def check_new_consumer(self, group: str, consumers: Collection[str], name: str) -> None:
        """Refuse ``name`` as a consumer more in a group whose consumers are ``consumers``
        (XGROUP CREATECONSUMER; XREADGROUP, XCLAIM, XAUTOCLAIM naming a new consumer, before
        they change anything, even when they would then claim or read nothing)."""
        full = self.group_consumers and len(consumers) >= self.group_consumers
        if full and name not in consumers:
            raise self.too_many_consumers(group)

    def too_many_groups(self, key: str) -> CommandError:
        return TooMany.err(
            f"too many consumer groups: key '{key}' holds at most {self.stream_groups} "
            "(max_stream_groups)"
        )

    def too_many_consumers(self, group: str) -> CommandError:
        return TooMany.err(
            f"too many consumers: group '{group}' holds at most {self.group_consumers} "
            "(max_group_consumers)"
        )

    def check_restored(self, groups: int, most_consumers: int) -> None:
        """RESTORE of a stream with more groups, or a group with more consumers, than the
        caps allow: refused, so no stream ever holds more than they say."""
        if self.stream_groups and groups > self.stream_groups:
            raise TooMany.err(
                f"RESTORE payload holds {groups} consumer groups: at most "
                f"{self.stream_groups} are allowed (max_stream_groups)"
            )
        if self.group_consumers and most_consumers > self.group_consumers:
            raise TooMany.err(
                f"RESTORE payload holds a group of {most_consumers} consumers: at most "
                f"{self.group_consumers} are allowed (max_group_consumers)"
            )


# XINFO GROUPS / CONSUMERS have no COUNT: their rows are read in pages over REST instead.
LISTING_HINT = "list them in pages over REST (/v1/streams/<key>/groups[/<group>/consumers])"
