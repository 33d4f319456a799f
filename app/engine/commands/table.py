"""The command table: each command described once (name, arity, flags, keys, handler).

The table drives parsing (arity and unknown-command errors, as ``processCommand`` gives them),
permission checks and durability: a command's flags say whether it writes or may block, and its
key positions (Redis's key specs, ``KeysOf``) say which keys it reads or changes, so a reply can
wait for exactly the journal records it could observe, and an access check can cover every key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from app.engine.blocking import Block
from app.engine.errors import CommandError, WrongArgument, WrongArity
from app.engine.keyspace import Keyspace
from app.engine.replies import CommandReply

Handler = Callable[[Keyspace, list[str]], CommandReply | Block]
KeysOf = Callable[[list[str]], list[str] | None]
"""The keys a command line names; ``None`` for a command over the whole keyspace (KEYS, SCAN,
DBSIZE, FLUSHALL). Only the command's own argv is looked at, never the keyspace."""


def no_keys(argv: list[str]) -> list[str]:
    return []


def every_key(argv: list[str]) -> None:
    return None


class KeyAt:
    """One key at ``argv[index]`` (1 for XADD, 2 for XGROUP CREATE). A class, not a closure,
    so that a caller scoping a run of lines can see where the key is (``index``)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, argv: list[str]) -> list[str]:
        return argv[self.index : self.index + 1]


def key_at(index: int) -> KeysOf:
    return KeyAt(index)


class KeysFrom:
    """Every argument from ``argv[index]`` on (DEL, EXISTS)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, argv: list[str]) -> list[str]:
        return argv[self.index :]


def keys_from(index: int) -> KeysOf:
    return KeysFrom(index)


def streams_positions(argv: list[str]) -> list[int]:
    """XREAD / XREADGROUP: the first half of what follows the STREAMS option, found as Redis's
    ``xreadGetKeys`` finds it (option values skipped, so a stream named "streams" after COUNT
    is not taken for the option). A malformed line names no key: the command fails before it
    touches one."""
    i, n = 1, len(argv)
    while i < n:
        option = argv[i].lower()
        if option == "streams":
            rest = n - i - 1
            return [] if rest % 2 else list(range(i + 1, i + 1 + rest // 2))
        i += {"block": 2, "count": 2, "group": 3}.get(option, 1)
    return []


def streams_keys(argv: list[str]) -> list[str]:
    """XREAD / XREADGROUP's keys (``streams_positions``)."""
    return [argv[i] for i in streams_positions(argv)]


def key_positions(keys: KeysOf, argv: list[str]) -> list[int] | None:
    """Where in ``argv`` the keys ``keys(argv)`` gives stand: what a caller that rewrites keys
    (a credential's prefix, app/access/prefix.py) needs beside the keys themselves. None for a
    command over the whole keyspace, or key positions this function does not know: such a
    line cannot be rewritten key by key."""
    if keys is no_keys:
        return []
    if isinstance(keys, KeyAt):
        return [keys.index] if keys.index < len(argv) else []
    if isinstance(keys, KeysFrom):
        return list(range(keys.index, len(argv)))
    if keys is streams_keys:
        return streams_positions(argv)
    return None


class Flag(StrEnum):
    WRITE = "write"  # changes the keyspace: journaled, refused to read-only tokens
    READONLY = "readonly"  # only reads
    MAY_BLOCK = "may-block"  # can park the request (BLOCK option)


class Access(StrEnum):
    """What a caller must be granted on every key a command names, as Redis's ACL categories
    say who may run what (``app/access`` decides from this, the keys and a grant)."""

    NONE = "none"  # PING, ECHO, HELP: any authenticated caller
    READ = "read"  # ranges, XREAD, XLEN, XINFO, EXISTS, TYPE
    CONSUME = "consume"  # a worker's: XREADGROUP, XACK, XNACK, XCLAIM, XAUTOCLAIM, XPENDING
    WRITE = "write"  # XADD, XDEL, XDELEX, XTRIM, XSETID, DEL, XGROUP's group and consumer admin
    CONSUME_WRITE = "consume+write"  # XACKDEL: a worker's ack that also deletes the entry
    ADMIN = "admin"  # the whole keyspace: KEYS, DBSIZE, FLUSHDB, FLUSHALL
    LIST = "list"  # SCAN: anyone who may read something; it lists only what they may read


@dataclass(slots=True)
class Command:
    name: str  # lower case; "container|sub" for a subcommand, as Redis's fullname
    arity: int  # Redis arity: exact when positive, a minimum when negative
    flags: frozenset[Flag]
    handler: Handler | None = None
    subcommands: dict[str, Command] = field(default_factory=dict)
    keys: KeysOf = no_keys
    access: Access = Access.NONE

    @property
    def writes(self) -> bool:
        return Flag.WRITE in self.flags


COMMANDS: dict[str, Command] = {}


def command(
    name: str, arity: int, *flags: Flag, keys: KeysOf = no_keys, access: Access | None = None
) -> Callable[[Handler], Handler]:
    """Register a handler; ``name`` may be ``"xgroup|create"`` for a subcommand. ``access``
    defaults to what the flags and keys say: no keys NONE, the whole keyspace ADMIN, a write
    WRITE, else READ."""
    if access is None:
        if keys is no_keys:
            access = Access.NONE
        elif keys is every_key:
            access = Access.ADMIN
        else:
            access = Access.WRITE if Flag.WRITE in flags else Access.READ

    def register(fn: Handler) -> Handler:
        container, _, sub = name.partition("|")
        entry = Command(name, arity, frozenset(flags), fn, keys=keys, access=access)
        if sub:
            COMMANDS[container].subcommands[sub] = entry
        else:
            COMMANDS[name] = entry
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
            raise WrongArgument.err(
                f"unknown subcommand '{argv[1][:128]}'. Try {argv[0].upper()} HELP."
            )
    if cmd is None:
        args = ""
        for a in argv[1:]:
            if len(args) >= 128:
                break
            args += f"'{a[: 128 - len(args)]}' "
        raise WrongArgument.err(
            f"unknown command '{argv[0][:128]}', with args beginning with: {args}"
        )
    n = len(argv)
    if (cmd.arity > 0 and cmd.arity != n) or n < -cmd.arity:
        raise WrongArity(cmd.name)
    return cmd


def resolved(argv: list[str]) -> Command | None:
    """The table entry ``argv`` names (a subcommand's when it has one), arity unchecked;
    None when there is none. INFO's stats count a rejected call under this name."""
    base = COMMANDS.get(argv[0].lower()) if argv else None
    if base is not None and base.subcommands:
        return base.subcommands.get(argv[1].lower()) if len(argv) > 1 else base
    return base


def named(fullname: str) -> Command:
    """The table entry of ``fullname`` (``"xadd"``, ``"xgroup|create"``); KeyError if none."""
    container, _, sub = fullname.partition("|")
    cmd = COMMANDS[container]
    return cmd.subcommands[sub] if sub else cmd


def subcommand_syntax_error(argv: list[str]) -> CommandError:
    return WrongArgument.err(
        f"unknown subcommand or wrong number of arguments for '{argv[1][:128]}'. "
        f"Try {argv[0].upper()} HELP."
    )
