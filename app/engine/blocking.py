"""Clients blocked on keys (XREAD / XREADGROUP BLOCK), served in arrival order after writes.

The synchronous half: which waiter waits for which keys, and serving them right after the
command that made a key ready, inside the same atomic step — so an entry added by XADD goes
to exactly one waiting consumer of a group, as Redis's ``handleClientsBlockedOnKeys`` does.
The asynchronous half (parking a request until served or timed out) is in ``waiting``.

A write touches only the waiters of the keys it signalled: waiters are indexed by key, each
key's waiters an insertion-ordered dict (arrival order, O(1) removal, where a list's
``remove`` scanned every waiter of each key), so serving or dropping a reader costs one
removal per key it named. That is still the reader's own key count, which is why a read may
name at most ``max_read_keys`` (``limits``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.engine.errors import CommandError
from app.engine.replies import StreamRead

# What a blocked read replies once served (an XREAD / XREADGROUP reply).
Served = list[StreamRead]
Retry = Callable[[str], Served | None]
"""Called with a key that became ready; returns the reply, or None to keep waiting."""


@dataclass(eq=False, slots=True)
class Block:
    """A read that found nothing and asked to wait: for these keys, up to ``timeout_ms``.

    ``wake_at_ms`` (engine time) is when the read should look again although no write
    signalled its keys: an XREADGROUP ... CLAIM read waits for a pending entry to turn idle
    enough as well as for new entries (``waiting.wait`` pokes it then)."""

    keys: list[str]
    timeout_ms: int  # 0 waits forever
    retry: Retry
    wake_at_ms: int | None = None
    # Set by whoever parks the read: called when ``wake_at_ms`` changed (a retry found an
    # entry pending that will turn idle enough later), to set its timer again.
    rearm: Callable[[], None] | None = None


@dataclass(eq=False, slots=True)
class Waiter:
    block: Block
    deliver: Callable[[Served | CommandError], None]
    done: bool = False


@dataclass(slots=True)
class BlockedClients:
    """Waiters per key in arrival order, and the keys signalled since the last serve."""

    by_key: dict[str, dict[Waiter, None]] = field(default_factory=dict)
    ready: dict[str, None] = field(default_factory=dict)  # ordered set

    def add(self, block: Block, deliver: Callable[[Served | CommandError], None]) -> Waiter:
        waiter = Waiter(block, deliver)
        for key in block.keys:
            self.by_key.setdefault(key, {})[waiter] = None
        return waiter

    def remove(self, waiter: Waiter) -> None:
        """Unregister ``waiter`` from every key it waits on (again: a no-op)."""
        if waiter.done:
            return
        waiter.done = True
        for key in waiter.block.keys:
            queue = self.by_key.get(key)
            if queue is None:
                continue
            queue.pop(waiter, None)
            if not queue:
                del self.by_key[key]

    def signal(self, key: str) -> None:
        if key in self.by_key:
            self.ready[key] = None

    def waiting_on(self, key: str) -> bool:
        """Whether a reader is blocked on ``key``."""
        return key in self.by_key

    def count(self) -> int:
        return len({id(w) for q in self.by_key.values() for w in q})

    def serve(self) -> None:
        """Offer each ready key to its waiters, oldest first, until no key is ready."""
        while self.ready:
            key = next(iter(self.ready))
            del self.ready[key]
            for waiter in list(self.by_key.get(key, ())):
                if waiter.done:
                    continue
                reply: Served | CommandError | None
                try:
                    reply = waiter.block.retry(key)
                except CommandError as e:
                    reply = e
                if reply is None:
                    continue
                self.remove(waiter)
                waiter.deliver(reply)
