"""The command table: each command described once (name, arity, flags, handler).

The table drives parsing (arity and unknown-command errors, as ``processCommand`` gives them),
permission checks and, later, journaling: a command's flags say whether it writes or may block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.engine.blocking import Block
from app.engine.errors import CommandError, WrongArity
from app.engine.keyspace import Keyspace

Reply = Any
Handler = Callable[[Keyspace, list[str]], Reply | Block]


class Flag(StrEnum):
    WRITE = "write"  # changes the keyspace: journaled, refused to read-only tokens
    READONLY = "readonly"  # only reads
    MAY_BLOCK = "may-block"  # can park the request (BLOCK option)


@dataclass(slots=True)
class Command:
    name: str  # lower case; "container|sub" for a subcommand, as Redis's fullname
    arity: int  # Redis arity: exact when positive, a minimum when negative
    flags: frozenset[Flag]
    handler: Handler | None = None
    subcommands: dict[str, Command] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        return Flag.WRITE in self.flags


COMMANDS: dict[str, Command] = {}


def command(name: str, arity: int, *flags: Flag) -> Callable[[Handler], Handler]:
    """Register a handler; ``name`` may be ``"xgroup|create"`` for a subcommand."""

    def register(fn: Handler) -> Handler:
        container, _, sub = name.partition("|")
        if sub:
            parent = COMMANDS[container]
            parent.subcommands[sub] = Command(name, arity, frozenset(flags), fn)
        else:
            COMMANDS[name] = Command(name, arity, frozenset(flags), fn)
        return fn

    return register


def container(name: str, arity: int = -2) -> None:
    COMMANDS[name] = Command(name, arity, frozenset())


def lookup(argv: list[str]) -> Command:
    """Find the command for ``argv`` and check its arity, with Redis's error texts."""
    base = COMMANDS.get(argv[0].lower())
    cmd = base
    if base is not None and base.subcommands and len(argv) > 1:
        cmd = base.subcommands.get(argv[1].lower())
        if cmd is None:
            raise CommandError.err(
                f"unknown subcommand '{argv[1][:128]}'. Try {argv[0].upper()} HELP."
            )
    if cmd is None:
        args = ""
        for a in argv[1:]:
            if len(args) >= 128:
                break
            args += f"'{a[: 128 - len(args)]}' "
        raise CommandError.err(
            f"unknown command '{argv[0][:128]}', with args beginning with: {args}"
        )
    n = len(argv)
    if (cmd.arity > 0 and cmd.arity != n) or n < -cmd.arity:
        raise WrongArity(cmd.name)
    return cmd


def subcommand_syntax_error(argv: list[str]) -> CommandError:
    return CommandError.err(
        f"unknown subcommand or wrong number of arguments for '{argv[1][:128]}'. "
        f"Try {argv[0].upper()} HELP."
    )
