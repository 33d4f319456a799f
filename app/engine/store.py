"""The one facade every surface calls: run Redis commands (and typed operations) atomically.

A command runs to completion without awaiting, so each is atomic on the event loop; blocked
readers that a command made ready are served before it returns, inside the same step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

from app.engine.blocking import Block
from app.engine.clock import Clock, SystemClock
from app.engine.commands import Command, lookup
from app.engine.commands.bulk import Outcome, auto_run_at, run_at, xadd_auto_run, xadd_run
from app.engine.commands.streams import XAddArgs
from app.engine.commands.table import resolved
from app.engine.effects import JournalSink, Record
from app.engine.errors import EXECABORT, CommandError
from app.engine.keyspace import Keyspace, StreamConfig
from app.engine.replay import restore, restore_stored, restore_stored_rows
from app.engine.replies import CommandReply
from app.engine.snapshot import SnapshotView, snapshot_view
from app.engine.stream import Fields

P = ParamSpec("P")
T = TypeVar("T")


class Store:
    def __init__(
        self,
        clock: Clock | None = None,
        config: StreamConfig | None = None,
        journal: JournalSink | None = None,
    ) -> None:
        self.keyspace = Keyspace(clock or SystemClock(), config or StreamConfig())
        self.journal = journal

    def snapshot_view(self) -> SnapshotView:
        """A consistent copy for a background snapshot (see ``snapshot.encode_snapshot``)."""
        return snapshot_view(self.keyspace)

    def restore(self, snapshot: bytes | None, records: Iterable[Record]) -> int:
        """Rebuild the (empty) keyspace from a snapshot and later journal records."""
        if self.keyspace.streams:
            raise RuntimeError("restore needs an empty store")
        return restore(self.keyspace, snapshot, records)

    def restore_stored(self, snapshot: bytes | None, values: Iterable[Any]) -> int:
        """``restore`` from records in their stored form (decoded JSON), as recovery reads
        them (``replay.restore_stored``)."""
        if self.keyspace.streams:
            raise RuntimeError("restore needs an empty store")
        return restore_stored(self.keyspace, snapshot, values)

    def restore_stored_rows(self, snapshot: bytes | None, rows: Iterable[list[Any]]) -> int:
        """``restore_stored`` a journal row's records at a time (``replay``)."""
        if self.keyspace.streams:
            raise RuntimeError("restore needs an empty store")
        return restore_stored_rows(self.keyspace, snapshot, rows)

    @property
    def clock(self) -> Clock:
        return self.keyspace.clock

    def command(self, argv: Sequence[str], *, counted: bool = True) -> Command:
        """The command ``argv`` names, with arity checked (raises Redis's error). A refusal
        counts in INFO's stats unless ``counted`` is False (a look-up that does not run it)."""
        try:
            if not argv:
                raise CommandError.err("empty command")
            return lookup(list(argv))
        except CommandError as e:
            if counted:
                self._rejected(argv, e)
            raise

    def _rejected(self, argv: Sequence[str], error: CommandError) -> None:
        cmd = resolved(list(argv[:2]))
        self.keyspace.stats.rejected(cmd.name if cmd is not None else None, error)

    def execute(
        self, argv: Sequence[str], *, may_block: bool = True, cmd: Command | None = None
    ) -> CommandReply | Block:
        """Run one command. A read that must wait returns a ``Block`` (see ``waiting``),
        counted in INFO's stats when it ends (``finished``); with ``may_block=False`` (inside
        MULTI) it answers nil at once, as Redis does. ``cmd``: its table entry, when the
        caller looked it up already."""
        args = list(argv)
        if cmd is None:
            cmd = self.command(args)
        assert cmd.handler is not None
        stats = self.keyspace.stats
        started = stats.started()
        try:
            reply = self.run(cmd.handler, args)
        except CommandError as e:
            stats.ran(cmd.name, started, e)
            raise
        if isinstance(reply, Block):
            if may_block:
                return reply
            reply = None
        stats.ran(cmd.name, started)
        return reply

    def finished(self, cmd: Command, error: CommandError | None = None) -> None:
        """A blocked command ended (served, timed out, or failed with ``error``)."""
        stats = self.keyspace.stats
        stats.ran(cmd.name, stats.started(), error)

    def run(
        self, operation: Callable[Concatenate[Keyspace, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a typed operation (``xadd(ks, XAddArgs(...))``...) as one atomic step.

        Every surface goes through here (or ``execute``): the operation's effects reach the
        journal as one record, and readers it made ready are served before it returns.
        """
        with self._step():
            return operation(self.keyspace, *args, **kwargs)

    def remember(self, name: str, fingerprint: bytes, response: bytes) -> None:
        """Keep an idempotent request's response (``app.engine.responses``) as a record of
        its own. No reader waits on it, so this is ``run`` without serving readers: it is on
        the path of every request that carries an Idempotency-Key."""
        ks = self.keyspace
        effect = ks.responses.keep(name, fingerprint, response, ks.clock.now_ms())
        if ks.effects is not None:  # inside a step: part of its record
            ks.effects.append(effect)
        elif self.journal is not None:
            self.journal.append([effect])

    def poke(self, keys: Sequence[str]) -> None:
        """Offer ``keys`` to their blocked readers as if a write had signalled them, in one
        atomic step (what a read delivers is journaled): a CLAIM read whose pending entries
        turned idle enough is served by time, not by a write."""
        with self._step():
            for key in keys:
                self.keyspace.blocked.signal(key)

    def append_run(self, run: list[XAddArgs]) -> list[Outcome]:
        """Consecutive plain XADDs to one key (``bulk.run_at``) as one atomic step and one
        journal effect, each answered as if run alone and counted as its own call in INFO."""
        stats = self.keyspace.stats
        with self._step():
            started = stats.started()
            outcomes = xadd_run(self.keyspace, run)
            stats.ran_many("xadd", started, list(outcomes))
        return outcomes

    def append_auto(self, key: str, rows: list[Fields]) -> list[Outcome]:
        """``append_run`` for the common shape, ``XADD key * ...`` per row
        (``bulk.auto_run_at``), without an argument tuple per XADD."""
        stats = self.keyspace.stats
        with self._step():
            started = stats.started()
            outcomes = xadd_auto_run(self.keyspace, key, rows)
            stats.ran_many("xadd", started, outcomes)
        return outcomes

    @contextmanager
    def _step(self) -> Iterator[None]:
        """One atomic step: collect its effects, then serve ready readers, then journal."""
        ks = self.keyspace
        journal = self.journal
        nested = ks.effects is not None
        if journal is not None and not nested:
            ks.effects = []
        try:
            yield
        finally:
            if not nested:
                try:
                    ks.blocked.serve()
                finally:
                    if journal is not None:
                        effects, ks.effects = ks.effects, None
                        if effects:
                            journal.append(effects)

    def execute_atomic(
        self, commands: Sequence[Sequence[str]]
    ) -> list[CommandReply | CommandError]:
        """MULTI/EXEC: every command checked first (one bad command discards them all), then
        all run back to back as one step — one journal record, and blocked readers served
        only after the last command, as Redis serves them after EXEC."""
        parsed = [list(c) for c in commands]
        cmds = []
        for args in parsed:
            try:
                cmd = self.command(args)
            except CommandError as e:
                error = CommandError(EXECABORT)
                self.keyspace.stats.error(error)
                raise error from e
            assert cmd.handler is not None
            cmds.append(cmd)
        out: list[CommandReply | CommandError] = []
        ks = self.keyspace
        stats = ks.stats
        with self._step():
            i = 0
            while i < len(parsed):
                auto = auto_run_at(ks, parsed, i, serve_between=False)
                if auto is not None:  # the common shape of the run below, found faster
                    started = stats.started()
                    replies = xadd_auto_run(ks, *auto)
                    out.extend(replies)
                    stats.ran_many("xadd", started, replies)
                    i += len(replies)
                    continue
                run = run_at(ks, parsed, i, serve_between=False)
                if run:  # consecutive plain XADDs to one key: one call, one effect
                    started = stats.started()
                    replies = xadd_run(ks, run)
                    out.extend(replies)
                    stats.ran_many("xadd", started, list(replies))
                    i += len(run)
                    continue
                cmd = cmds[i]
                started = stats.started()
                assert cmd.handler is not None
                try:
                    reply = cmd.handler(ks, parsed[i])
                    out.append(None if isinstance(reply, Block) else reply)
                    stats.ran(cmd.name, started)
                except CommandError as e:
                    out.append(e)
                    stats.ran(cmd.name, started, e)
                i += 1
        return out
