"""The backend as every surface sees it: the one place appends and reads spend the request's
meter (app/api/meter.py) on their way to the real backend.

Every surface calls ``Services.backend``: REST its typed ``append``, Durable Streams its
``append_guarded``, both ``range`` and ``read``, the command endpoint its ``command``,
``pipeline`` and ``multi_exec``. ``MeteredBackend`` wraps those seven and hands everything
else through untouched, so a new surface is metered by calling the backend as the others
do. Outside a request with a meter (background work: webhooks, retention, the shared tails
of live event streams) it only forwards. On the command endpoint, XADD's fields are its
arguments after the ID; XRANGE, XREVRANGE, XREAD and XREADGROUP are the reads (XCLAIM and
XAUTOCLAIM move entries between consumers and are not counted). A pipeline or a transaction
spends its XADDs' bytes at once, before any line runs, and peeks once if any line reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from app.api.meter import METER, fields_bytes
from app.backends import Backend
from app.backends.roles import Gone, JsonReply
from app.engine.commands.guarded import Guard
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.replies import StreamRead
from app.engine.stream import Entry

__all__ = ["MeteredBackend", "metered"]

READS = frozenset({"xrange", "xrevrange", "xread", "xreadgroup"})
# XADD's options before its ID, and how many arguments each takes after its name.
_XADD_OPTIONS = {"nomkstream": 0, "maxlen": 1, "minid": 1, "limit": 1, "idmp": 2, "idmpauto": 1}


def xadd_fields(argv: Sequence[str]) -> Sequence[str]:
    """XADD's field names and values: what follows its ID, past the key and the options."""
    i = 2
    while i < len(argv):
        word = argv[i].lower()
        if word not in _XADD_OPTIONS:
            break
        i += 1 + _XADD_OPTIONS[word]
        if word in ("maxlen", "minid") and i - 1 < len(argv) and argv[i - 1] in ("=", "~"):
            i += 1  # the ``=`` or ``~`` came before the threshold
    return argv[i + 1 :]


def command_bytes(commands: Sequence[Sequence[str]]) -> int:
    return sum(
        fields_bytes(xadd_fields(args)) for args in commands if args and args[0].lower() == "xadd"
    )


def reply_entries(name: str, reply: Any) -> int:
    """How many entries a read command's reply holds, as the engine's objects or Redis's."""
    if isinstance(reply, CommandError) or not isinstance(reply, list | dict):
        return 0
    if name in ("xrange", "xrevrange"):
        return len(reply)
    parts = reply.items() if isinstance(reply, dict) else reply
    n = 0
    for part in parts:
        if isinstance(part, StreamRead):
            n += len(part.entries)
        elif isinstance(part, list | tuple) and len(part) == 2 and isinstance(part[1], list):
            n += len(part[1])
    return n


class MeteredBackend:
    """``inner`` with its appends and reads spending the current request's meter."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        meter = METER.get()
        if meter is not None:
            await meter.append(sum(fields_bytes(a.fields) for a in batch), len(batch))
        return await self.inner.append(batch)

    async def append_guarded(
        self, batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None = None
    ) -> list[StreamID | None] | None:
        """The caller's entries are spent; the record beside them is the service's own."""
        meter = METER.get()
        if meter is not None:
            await meter.append(sum(fields_bytes(a.fields) for a in batch), len(batch))
        return await self.inner.append_guarded(batch, guard, record)

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        meter = METER.get()
        if meter is None:
            return await self.inner.range(args, rev)
        await meter.before_read()
        found = await self.inner.range(args, rev)
        await meter.after_read(len(found))
        return found

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        meter = METER.get()
        if meter is None:
            return await self.inner.read(request, gone)
        await meter.before_read()
        got = await self.inner.read(request, gone)
        await meter.after_read(sum(len(r.entries) for r in got))
        return got

    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> JsonReply:
        meter = METER.get()
        name = argv[0].lower() if argv else ""
        if meter is None or (name != "xadd" and name not in READS):
            return await self.inner.command(argv, gone)
        if name == "xadd":
            await meter.append(fields_bytes(xadd_fields(argv)), 1)
            return await self.inner.command(argv, gone)
        await meter.before_read()
        reply = await self.inner.command(argv, gone)
        await meter.after_read(reply_entries(name, reply))
        return reply

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[JsonReply | CommandError]:
        names = await self._before(commands)
        results = await self.inner.pipeline(commands, gone)
        await self._after(names, results)
        return results

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        names = await self._before(commands)
        results = await self.inner.multi_exec(commands)
        await self._after(names, results)
        return results

    async def _before(self, commands: Sequence[Sequence[str]]) -> list[str] | None:
        """Spend a batch's bytes and peek for its reads: the reads' names (None: unmetered)."""
        meter = METER.get()
        if meter is None:
            return None
        names = [args[0].lower() if args else "" for args in commands]
        if any(n in READS for n in names):
            await meter.before_read()  # first: a refused batch has spent no bytes
        appends = sum(1 for n in names if n == "xadd")
        await meter.append(command_bytes(commands), appends)
        return names

    async def _after(self, names: list[str] | None, results: Sequence[object]) -> None:
        meter = METER.get()
        if meter is None or names is None:
            return
        n = sum(
            reply_entries(name, r) for name, r in zip(names, results, strict=False) if name in READS
        )
        await meter.after_read(n)


def metered(backend: Backend) -> Backend:
    """``backend`` behind the meter, as the surfaces take it."""
    return cast(Backend, MeteredBackend(backend))
