"""The command endpoint in front of Redis: one command, a pipeline, a transaction.

The engine's command table decides what may run, with its errors (unknown, arity); the rest
is Redis's. Replies come back in the command endpoint's shape (parse.py).

- Redis Cluster: KEYS, DBSIZE, FLUSHDB / FLUSHALL run on every master (KEYS concatenated,
  DBSIZE summed); SCAN walks the masters one after another (routing.py). DEL / EXISTS over
  several slots are summed per slot; any other multi-key command is Redis's (CROSSSLOT). A
  /multi-exec must name keys of one slot only, else the whole transaction is refused with
  Redis's CROSSSLOT text.
- FLUSHALL runs as FLUSHDB: the backend's keyspace is its database, not the whole server.
- A stream command newer than the server (XDELEX, XACKDEL, a trim policy, XREADGROUP ...
  CLAIM, XNACK) is sent as newer.py says: a script, or refused before it is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from redis.exceptions import (
    ResponseError,
)

from app.backends.base import Gone
from app.backends.errors import (
    BackendUnavailable,
    BlockPoolExhausted,
    RedisUnavailable,
)
from app.backends.redis.blocking import without_block
from app.backends.redis.delivery import RedisDelivery, applies, gated_read
from app.backends.redis.features import Features
from app.backends.redis.limits import Bounded, read_head, read_request, within_limits
from app.backends.redis.newer import older
from app.backends.redis.parse import (
    Arg,
    Raw,
    command_argv,
    command_reply,
    encode,
    redis_error,
)
from app.backends.redis.reads import Reads, id_errors
from app.engine.commands.reads import may_block
from app.engine.commands.table import Command, lookup
from app.engine.errors import EXECABORT, CommandError
from app.engine.limits import Limits
from app.engine.replies import CommandReply

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"


class Passthrough(RedisDelivery):
    """Raw commands, routed by their keys on ``_router``, within the limits (limits.py);
    XREAD / XREADGROUP through ``_reads``. A part of ``RedisBackend``, which sets them; the
    groups' delivery policies (``RedisDelivery``) apply to every group read, and a DEL,
    UNLINK or XGROUP DESTROY forgets the policies of what it removed."""

    _reads: Reads
    _limits: Limits

    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> CommandReply:
        args = list(argv)
        cmd = _known(args)
        raw = await self._run(cmd, args, gone)
        await self.forget(cmd.name, args)
        return command_reply(cmd.name, args, raw)

    async def _forget(
        self, parsed: list[list[str]], answers: Sequence[CommandReply | CommandError]
    ) -> None:
        """The policies of what a pipeline's or a transaction's DEL, UNLINK, XGROUP
        DESTROY removed (delivery.py)."""
        for args, answer in zip(parsed, answers, strict=False):
            if isinstance(answer, CommandError) or not args:
                continue
            if args[0].lower() in ("del", "unlink", "xgroup"):
                try:
                    name = _known(args).name
                except CommandError:
                    continue
                await self.forget(name, args)

    async def _run(self, cmd: Command, args: list[str], gone: Gone | None) -> Raw:
        name = cmd.name
        if name in ("xread", "xreadgroup"):
            return await self._reads.command(args, gone)
        if name == "flushall":
            args = ["FLUSHDB", *args[1:]]
            name = "flushdb"
        bounded = self._bound(await self._router.server_features(), cmd, args)
        if bounded is not None:  # one key (or keys of one slot): routed by the first
            key = (cmd.keys(args) or [args[1]])[0]
            each = self._router.write if cmd.writes or bounded.writes else self._router.call
            return bounded.finish(await each(key, *bounded.line))
        raw = command_argv(args)
        keys = cmd.keys(args)
        if not self._router.cluster or keys == []:
            if cmd.writes:
                return await self._router.write(keys[0] if keys else None, *raw)
            return await self._router.call(keys[0] if keys else None, *raw)
        if keys is None:
            return await self._everywhere(name, args, raw)
        if name in ("del", "exists") and len({self._router.slot(k) for k in keys}) > 1:
            each = self._router.write if cmd.writes else self._router.call
            total = 0
            for key in keys:
                total += int(await each(key, raw[0], encode(key)))
            return total
        if cmd.writes:
            return await self._router.write(keys[0], *raw)
        return await self._router.call(keys[0], *raw)

    def _bound(self, features: Features, cmd: Command, args: list[str]) -> Bounded | None:
        """How ``args`` is sent: a command newer than the server by newer.py, else within
        the limits (limits.py); None: as it is."""
        bounded = older(features, self._limits, cmd, args) or within_limits(self._limits, cmd, args)
        if cmd.name == "xreadgroup" and (bounded is None or bounded.line != ["PING"]):
            r = read_request(args)
            if r is not None and applies(r):  # the group's policy first (delivery.py)
                keys, ids = list(r.keys), list(r.ids)
                head = without_block(read_head(r, r.count))
                plain: list[Arg] = [*head, "STREAMS", *map(encode, keys), *map(encode, ids)]
                fallback = bounded if bounded is not None else plain
                read = gated_read(self._limits, r, keys, ids, id_errors(r), fallback)
                return Bounded(read.line, read.finish, writes=True)
        return bounded

    async def _everywhere(self, name: str, args: list[str], raw: list[Arg]) -> Raw:
        """A whole-keyspace command in a cluster (see this module's docstring)."""
        masters = self._router.masters()
        if name == "scan":
            return await self._router.cluster_scan(args[1], raw[2:])
        if name in ("info", "config|get"):
            return await self._router.call(None, *raw)
        replies = [await self._router.call(None, *raw, node=n) for n in masters]
        if name == "keys":
            return [k for r in replies for k in r]
        if name == "dbsize":
            return sum(int(r) for r in replies)
        return replies[0]  # FLUSHDB, CONFIG SET / RESETSTAT: the same answer from each

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[CommandReply | CommandError]:
        """Not atomic. On redis-server, sent on one connection in one round trip (unless one
        of them may block: those wait their turn one by one, as the embedded endpoint's do);
        in a cluster, one by one, each routed to its slot. Too few replicas for
        ``wait_replicas`` fails the whole request (``ReplicasUnavailable``) after every
        command ran, and so does a command Redis refused for a passing state of its own
        (``RedisFault``: CLUSTERDOWN, LOADING...): the service's trouble, not one command's.
        Redis being unreachable, or no connection for a blocking read, fails it at once."""
        parsed = [list(c) for c in commands]
        features = await self._router.server_features()
        if self._router.cluster or any(may_block(a) for a in parsed):
            out: list[CommandReply | CommandError] = []
            for argv in parsed:
                try:
                    out.append(await self.command(argv, gone))
                except (RedisUnavailable, BlockPoolExhausted):
                    raise  # the service's trouble, not one command's: the request fails
                except CommandError as e:
                    out.append(e)
            return _unless_unavailable(out)
        answers: list[CommandReply | CommandError] = [None] * len(parsed)
        finish: dict[int, Callable[[Raw], Raw]] = {}
        sent: list[int] = []
        lines: list[list[Arg]] = []
        writes = False
        for i, args in enumerate(parsed):
            try:
                cmd = _known(args)
            except CommandError as e:
                answers[i] = e
                continue
            if cmd.name == "flushall":
                args = ["FLUSHDB", *args[1:]]
            bounded = self._bound(features, cmd, args)
            if bounded is not None:
                finish[i] = bounded.finish
            writes = writes or cmd.writes or (bounded is not None and bounded.writes)
            sent.append(i)
            lines.append(command_argv(args) if bounded is None else bounded.line)
        wait = bool(self._router.wait_replicas and writes)
        if wait:
            lines.append(self._router.wait_args())
        replies = await self._router.sequence(None, lines) if lines else []
        for i, line, r in zip(sent, lines, replies, strict=False):
            answers[i] = _answer(parsed[i], line, r, finish.get(i))
        if wait:
            self._router.check_acked(replies[-1])
        await self._forget(parsed, answers)
        return _unless_unavailable(answers)

    async def multi_exec(
        self, commands: Sequence[Sequence[str]]
    ) -> list[CommandReply | CommandError]:
        parsed = [list(c) for c in commands]
        cmds = []
        for args in parsed:
            try:
                cmds.append(_known(args))
            except CommandError as e:
                raise CommandError(EXECABORT) from e
        first: str | None = None
        if self._router.cluster:
            slots: set[int] = set()
            for cmd, args in zip(cmds, parsed, strict=True):
                for key in cmd.keys(args) or []:
                    slots.add(self._router.slot(key))
                    first = first or key
            if len(slots) > 1:
                raise CommandError(CROSSSLOT)
        lines: list[list[Arg]] = [["MULTI"]]
        finish: list[Callable[[Raw], Raw] | None] = []
        writes = False
        features = await self._router.server_features()
        for cmd, args in zip(cmds, parsed, strict=True):
            if cmd.name == "flushall":
                args = ["FLUSHDB", *args[1:]]
            bounded = self._bound(features, cmd, args)
            finish.append(None if bounded is None else bounded.finish)
            writes = writes or cmd.writes or (bounded is not None and bounded.writes)
            lines.append(command_argv(args) if bounded is None else bounded.line)
        lines.append(["EXEC"])
        writes = bool(self._router.wait_replicas) and writes
        if writes:
            lines.append(self._router.wait_args())
        replies = await self._router.sequence(first, lines)
        result = replies[len(parsed) + 1]
        if isinstance(result, ResponseError):
            # EXECABORT for a command refused as it was queued: when Redis refused it for a
            # passing state (CLUSTERDOWN...), that is the transaction's answer.
            for queued in replies[1 : len(parsed) + 1]:
                if isinstance(queued, ResponseError):
                    _unless_unavailable([redis_error(queued)])
            raise redis_error(result)
        if writes:
            self._router.check_acked(replies[-1])
        answers = [
            _answer(args, line, r, f)
            for args, line, r, f in zip(parsed, lines[1:], result or [], finish, strict=False)
        ]
        await self._forget(parsed, answers)
        return answers


def _unless_unavailable(
    answers: list[CommandReply | CommandError],
) -> list[CommandReply | CommandError]:
    """``answers``, unless one of them is the backend's trouble (``BackendUnavailable``):
    then that is the whole request's error, raised."""
    for r in answers:
        if isinstance(r, BackendUnavailable):
            raise r
    return answers


def _answer(
    args: list[str], line: list[Arg], r: Raw, finish: Callable[[Raw], Raw] | None
) -> CommandReply | CommandError:
    """One reply of a pipeline or a transaction, in the command endpoint's shape."""
    if isinstance(r, ResponseError):
        return redis_error(r, line)
    if finish is not None:
        try:
            r = finish(r)
        except CommandError as e:
            return e
    return command_reply(args[0].lower(), line, r)


def _known(args: list[str]) -> Command:
    """The embedded command table decides what may run, with its errors (unknown, arity)."""
    if not args:
        raise CommandError.err("empty command")
    return lookup(args)
