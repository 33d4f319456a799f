"""What INFO counts: commands run (``commandstats``), error replies by code (``errorstats``),
and the totals of ``stats``; CONFIG RESETSTAT sets them back to zero.

Redis's bookkeeping (``call()``, ``afterErrorReply``, ``updateStatsOnUnblock``): a command
that ran counts a call, and a failed call when it answered an error; one refused before it ran
(wrong number of arguments) counts a rejected call; an unknown command counts only its error.
A blocked read counts its call when it ends: served, timed out, or failed (a NOGROUP when its
group went away). Every error reply counts once under its code, the first word of its text.

``usec`` is measured with ``time.perf_counter_ns``: a measure of work done, like Redis's, not
a time any semantics depends on (those come from the injected clock).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.engine.errors import CommandError

_ERROR_CODE_MAX = 32  # Redis looks for the code's end within the first 32 bytes


@dataclass(slots=True)
class CommandStat:
    """One ``cmdstat_<name>`` line."""

    calls: int = 0
    usec: int = 0
    rejected_calls: int = 0
    failed_calls: int = 0


@dataclass(slots=True)
class Stats:
    commands: dict[str, CommandStat] = field(default_factory=dict)  # by full name, xgroup|create
    errors: dict[str, int] = field(default_factory=dict)  # error replies by code
    total_commands_processed: int = 0
    total_error_replies: int = 0

    def started(self) -> int:
        """A start mark for ``ran`` (``perf_counter_ns``)."""
        return time.perf_counter_ns()

    def ran(self, name: str, started_ns: int, error: CommandError | None = None) -> None:
        """A command ran to its reply (``error`` if that was an error)."""
        stat = self.commands.get(name)
        if stat is None:
            stat = self.commands[name] = CommandStat()
        stat.calls += 1
        stat.usec += (time.perf_counter_ns() - started_ns) // 1000
        self.total_commands_processed += 1
        if error is not None:
            stat.failed_calls += 1
            self.error(error)

    def ran_many(self, name: str, started_ns: int, replies: Sequence[object]) -> None:
        """Several calls of one command run as one (a fused run of XADDs): each counts a call,
        and a failed one when its reply is an error; the time is counted once."""
        stat = self.commands.get(name)
        if stat is None:
            stat = self.commands[name] = CommandStat()
        stat.calls += len(replies)
        stat.usec += (time.perf_counter_ns() - started_ns) // 1000
        self.total_commands_processed += len(replies)
        if any(map(CommandError.__instancecheck__, replies)):  # else no reply to look at
            for reply in replies:
                if isinstance(reply, CommandError):
                    stat.failed_calls += 1
                    self.error(reply)

    def rejected(self, name: str | None, error: CommandError) -> None:
        """A command refused before running (``name`` None: an unknown command)."""
        if name is not None:
            stat = self.commands.get(name)
            if stat is None:
                stat = self.commands[name] = CommandStat()
            stat.rejected_calls += 1
        self.error(error)

    def error(self, error: CommandError) -> None:
        space = error.text.find(" ", 0, _ERROR_CODE_MAX)
        code = error.text[:space] if space > 0 else "ERR"
        self.errors[code] = self.errors.get(code, 0) + 1
        self.total_error_replies += 1

    def reset(self) -> None:
        """CONFIG RESETSTAT."""
        self.commands.clear()
        self.errors.clear()
        self.total_commands_processed = 0
        self.total_error_replies = 0
