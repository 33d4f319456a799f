"""PING, ECHO, DEL, EXISTS, TYPE, RENAME, RENAMENX, KEYS, SCAN, DBSIZE, FLUSHDB, FLUSHALL."""

from __future__ import annotations

from app.engine.commands.args import int_arg
from app.engine.commands.table import Access, Flag, command, every_key, key_at, keys_from
from app.engine.errors import CommandError, NoSuchKey, SyntaxError_, WrongArgument, WrongArity
from app.engine.ids import UINT64_MAX
from app.engine.keyspace import Keyspace
from app.engine.replies import OK, PONG, ScanPage, Status

W, R = Flag.WRITE, Flag.READONLY


@command("ping", -1, R)
def _ping(ks: Keyspace, argv: list[str]) -> str:
    if len(argv) > 2:
        raise WrongArity("ping")
    return PONG if len(argv) == 1 else argv[1]


@command("echo", 2, R)
def _echo(ks: Keyspace, argv: list[str]) -> str:
    return argv[1]


@command("del", -2, W, keys=keys_from(1))
def _del(ks: Keyspace, argv: list[str]) -> int:
    return sum(ks.delete(k) for k in argv[1:])


@command("exists", -2, R, keys=keys_from(1))
def _exists(ks: Keyspace, argv: list[str]) -> int:
    return sum(k in ks.streams for k in argv[1:])


@command("type", 2, R, keys=key_at(1))
def _type(ks: Keyspace, argv: list[str]) -> Status:
    return Status("stream" if argv[1] in ks.streams else "none")


def _rename(ks: Keyspace, argv: list[str], nx: bool) -> Status | int:
    """RENAME / RENAMENX (``renameGenericCommand``): the source must exist (checked first,
    even when both names are one); then RENAMENX leaves an existing destination alone and
    answers 0, while RENAME replaces it."""
    src, dst = argv[1], argv[2]
    if src not in ks.streams:
        raise NoSuchKey()
    if src == dst:
        return 0 if nx else OK
    if nx and dst in ks.streams:
        return 0
    ks.rename(src, dst)
    return 1 if nx else OK


@command("rename", 3, W, keys=keys_from(1))
def _rename_cmd(ks: Keyspace, argv: list[str]) -> Status | int:
    return _rename(ks, argv, nx=False)


@command("renamenx", 3, W, keys=keys_from(1))
def _renamenx(ks: Keyspace, argv: list[str]) -> Status | int:
    return _rename(ks, argv, nx=True)


@command("keys", 2, R, keys=every_key)
def _keys(ks: Keyspace, argv: list[str]) -> list[str]:
    return ks.keys(argv[1])


SCAN_COUNT = 10  # SCAN's COUNT when none is given, as Redis's


def invalid_cursor() -> CommandError:
    return WrongArgument.err("invalid cursor")


def _cursor(text: str) -> int:
    # parseScanCursorOrReply: strtoull, rejecting leading blanks and trailing junk
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit() or not body.isascii() or int(body) > UINT64_MAX:
        raise invalid_cursor()
    v = int(body)
    return (-v) % (1 << 64) if text[:1] == "-" else v


@command("scan", -2, R, keys=every_key, access=Access.LIST)
def _scan(ks: Keyspace, argv: list[str]) -> ScanPage:
    cursor = _cursor(argv[1])
    count = SCAN_COUNT
    match: str | None = None
    type_: str | None = None
    i = 2
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i - 1
        if opt == "count" and more >= 1:
            count = int_arg(argv[i + 1])
            if count < 1:
                raise SyntaxError_()
        elif opt == "match" and more >= 1:
            match = argv[i + 1]
        elif opt == "type" and more >= 1:
            type_ = argv[i + 1]
        else:
            raise SyntaxError_()
        i += 2
    return ks.scan(cursor, count, match, type_)


@command("dbsize", 1, R, keys=every_key)
def _dbsize(ks: Keyspace, argv: list[str]) -> int:
    return len(ks.streams)


def _flush(ks: Keyspace, argv: list[str]) -> Status:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in ("sync", "async")):
        raise SyntaxError_()
    ks.flush()
    return OK


command("flushdb", -1, W, keys=every_key)(_flush)
command("flushall", -1, W, keys=every_key)(_flush)
