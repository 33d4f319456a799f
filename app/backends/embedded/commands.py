"""The command endpoint on the embedded engine: one command, a pipeline, a transaction.

The engine's fast paths stay behind the protocol here: consecutive plain XADDs to one key in
a pipeline or a transaction run as one engine call and one journal record
(``commands.bulk``), a long pipeline lets other requests run between its commands, and each
command is timed for ``/metrics`` (``CommandTimer``) as the engine ran it. A pipeline's
answer waits once for every key its commands name (``scope_of``: one group commit).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from operator import itemgetter

from app.backends.base import CommandTimer, Gone, JsonReply
from app.backends.embedded.durable import DurableAnswers
from app.engine.blocking import Block
from app.engine.commands.bulk import auto_run_at, run_at
from app.engine.commands.reads import any_may_block, may_block
from app.engine.commands.table import Command, KeyAt, lookup
from app.engine.errors import CommandError
from app.engine.waiting import ClientGone, wait


class CommandEndpoint(DurableAnswers):
    """The command endpoint's half of ``EmbeddedBackend``."""

    timer: CommandTimer | None
    pipeline_slice_s: float

    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> JsonReply:
        """Run one command; a read that must wait parks until served, timed out, cancelled
        or its client gone (``gone``). Its answer waits for the keys the table says it names
        (a refused line names none: it shows no state)."""
        cmd = self.store.command(argv)  # a refusal is counted in INFO's stats, as Redis counts it
        self._refuse_blocking(may_block(argv))
        if self.durability is None:
            return await self._command(argv, cmd, gone)
        keys = cmd.keys(list(argv))
        if cmd.writes:
            self.durability.check_writable()
        try:
            reply = await self._command(argv, cmd, gone)
        except ClientGone:
            raise
        except Exception:
            await self._visible(keys)  # an error shows state too (NOGROUP)
            raise
        await self._visible(keys)
        return reply

    async def _command(self, argv: Sequence[str], cmd: Command, gone: Gone | None) -> JsonReply:
        store = self.store
        timer = self.timer
        started = time.perf_counter()
        try:
            reply = store.execute(argv, cmd=cmd)
        finally:
            if timer is not None:  # the engine's time: a blocked read's wait is not in it
                timer.command(cmd.name, time.perf_counter() - started)
        if isinstance(reply, Block):  # counted in INFO's stats when it ends, as Redis counts it
            try:
                reply = await wait(store, reply, gone)
            except CommandError as e:
                store.finished(cmd, e)
                raise
            store.finished(cmd)
        return reply

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[JsonReply | CommandError]:
        """Each command in order, not atomic: other requests may run between them once the
        pipeline has held the loop ``pipeline_slice_ms`` (by time, not by count: a short
        pipeline runs whole, so its records share one group commit). Consecutive plain XADDs
        to one key run as one engine call, each still answered (and counted) as its own.
        Refused before any runs if one of them writes and storage cannot take it; answered
        once every key any of them names is durable."""
        self._refuse_blocking(any_may_block(commands))
        if self.durability is None:
            return await self._pipeline(commands, gone)
        writes, keys = scope_of(commands)
        if writes:
            self.durability.check_writable()
        try:
            out = await self._pipeline(commands, gone)
        except ClientGone:
            raise
        except Exception:
            await self._visible(keys)
            raise
        await self._visible(keys)  # once: one group commit
        return out

    async def _pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None
    ) -> list[JsonReply | CommandError]:
        store = self.store
        timer = self.timer
        out: list[JsonReply | CommandError] = []
        loop = asyncio.get_running_loop()
        slice_s = self.pipeline_slice_s
        started = loop.time()
        i, n = 0, len(commands)
        while i < n:
            if loop.time() - started >= slice_s:
                await asyncio.sleep(0)
                started = loop.time()
            ks = store.keyspace
            auto = auto_run_at(ks, commands, i, serve_between=True)
            run = [] if auto is not None else run_at(ks, commands, i, serve_between=True)
            if auto is not None or run:
                t0 = time.perf_counter()
                outcomes = store.append_auto(*auto) if auto is not None else store.append_run(run)
                if timer is not None:  # counted as the XADDs they are
                    each = (time.perf_counter() - t0) / len(outcomes)
                    timer.command_run("xadd", len(outcomes), each)
                out.extend(outcomes)
                i += len(outcomes)
                continue
            try:
                args = commands[i]
                out.append(await self._command(args, store.command(args), gone))
            except CommandError as e:
                out.append(e)
            i += 1
        return out

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        """MULTI/EXEC as one engine step (``Store.execute_atomic``), timed whole as ``exec``
        with each of its commands counted, as Redis's commandstats count them. A transaction
        refused whole (EXECABORT) shows no state and waits for nothing."""
        writes, keys = scope_of(commands) if self.durability is not None else (False, [])
        if writes:
            self._writable()
        store = self.store
        started = time.perf_counter()
        results = store.execute_atomic(commands)  # EXECABORT: raised, nothing ran
        timer = self.timer
        if timer is not None:
            timer.command("exec", time.perf_counter() - started)
            for args in commands:
                timer.counted(store.command(args, counted=False).name)
        await self._visible(keys)
        return results


def scope_of(commands: Sequence[Sequence[str]]) -> tuple[bool, list[str] | None]:
    """Whether any of ``commands`` writes, and every key they name (None: a command over
    the whole keyspace). A line the table refuses names nothing. A run of lines of one
    command and length (a pipeline of XADDs) is looked up once, and a run on one key names
    it once."""
    uniform = _uniform_scope(commands)
    if uniform is not None:
        return uniform
    writes = False
    keys: list[str] | None = []
    cmd: Command | None = None
    name, size = "", -1
    for args in commands:
        if not args:
            continue
        if cmd is None or len(args) != size or args[0] != name or "|" in cmd.name:
            try:
                cmd = lookup(list(args))
            except CommandError:
                cmd = None
                continue
            name, size = args[0], len(args)
        writes = writes or cmd.writes
        if keys is not None:
            named = cmd.keys(list(args))
            if named is None:
                keys = None
            elif len(named) != 1 or not keys or keys[-1] != named[0]:
                keys.extend(named)
    return writes, keys


def _uniform_scope(commands: Sequence[Sequence[str]]) -> tuple[bool, list[str]] | None:
    """``scope_of`` the common pipeline, in C passes: every line the same command on the
    same key at index 1 (a run of XADDs), looked up once. None: not that shape."""
    if len(commands) < 2 or len(set(map(len, commands))) != 1 or len(commands[0]) < 2:
        return None
    if len(set(map(_NAME_KEY, commands))) != 1:
        return None
    try:
        cmd = lookup(list(commands[0]))
    except CommandError:
        return None
    if not isinstance(cmd.keys, KeyAt) or cmd.keys.index != 1 or "|" in cmd.name:
        return None
    return cmd.writes, [commands[0][1]]


_NAME_KEY = itemgetter(0, 1)
