"""The one facade every surface calls: run Redis commands (and typed operations) atomically.

A command runs to completion without awaiting, so each is atomic on the event loop; blocked
readers that a command made ready are served before it returns, inside the same step.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.blocking import Block
from app.engine.clock import Clock, SystemClock
from app.engine.commands import Command, Reply, lookup
from app.engine.errors import CommandError
from app.engine.keyspace import Keyspace, StreamConfig


class Store:
    def __init__(self, clock: Clock | None = None, config: StreamConfig | None = None) -> None:
        self.keyspace = Keyspace(clock or SystemClock(), config or StreamConfig())

    @property
    def clock(self) -> Clock:
        return self.keyspace.clock

    def command(self, argv: Sequence[str]) -> Command:
        """The command ``argv`` names, with arity checked (raises Redis's error)."""
        if not argv:
            raise CommandError.err("empty command")
        return lookup(list(argv))

    def execute(self, argv: Sequence[str], *, may_block: bool = True) -> Reply | Block:
        """Run one command. A read that must wait returns a ``Block`` (see ``waiting``);
        with ``may_block=False`` (inside MULTI) it answers nil at once, as Redis does."""
        args = list(argv)
        cmd = self.command(args)
        assert cmd.handler is not None
        try:
            reply = cmd.handler(self.keyspace, args)
        finally:
            self.keyspace.blocked.serve()
        if isinstance(reply, Block) and not may_block:
            return None
        return reply

    def execute_atomic(self, commands: Sequence[Sequence[str]]) -> list[Reply | CommandError]:
        """MULTI/EXEC: every command checked first (one bad command discards them all), then
        all run back to back; a command failing at run time does not stop the others."""
        parsed = [list(c) for c in commands]
        for args in parsed:
            try:
                self.command(args)
            except CommandError as e:
                raise CommandError(
                    "EXECABORT Transaction discarded because of previous errors."
                ) from e
        out: list[Reply | CommandError] = []
        for args in parsed:
            try:
                out.append(self.execute(args, may_block=False))
            except CommandError as e:
                out.append(e)
        return out
