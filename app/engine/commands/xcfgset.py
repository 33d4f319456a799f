"""XCFGSET (Redis 8.6): a stream's IDMP window and size.

Access: ``write``, as XSETID, the other command that changes one stream's settings. CONFIG
SET is ``admin`` because it changes how every stream grows; XCFGSET touches one key, so the
grant that may append to a stream may also set how its appends are deduplicated.
"""

from __future__ import annotations

from typing import NamedTuple

from app.engine.commands.args import int_arg
from app.engine.commands.table import Flag, command, key_at
from app.engine.effects import IdmpConfigured
from app.engine.errors import NoSuchKey, SyntaxError_, WrongArgument
from app.engine.idmp import MAX_DURATION_S, MAX_MAXSIZE, MIN_DURATION_S, MIN_MAXSIZE
from app.engine.keyspace import Keyspace
from app.engine.replies import OK, Status


class XCfgSetArgs(NamedTuple):
    """XCFGSET's settings; None: left as it is."""

    key: str
    duration_s: int | None = None
    maxsize: int | None = None


def _duration(value: int) -> int:
    if not MIN_DURATION_S <= value <= MAX_DURATION_S:
        raise WrongArgument.err(
            f"IDMP-DURATION must be between {MIN_DURATION_S} and {MAX_DURATION_S} seconds"
        )
    return value


def _maxsize(value: int) -> int:
    if not MIN_MAXSIZE <= value <= MAX_MAXSIZE:
        raise WrongArgument.err(
            f"IDMP-MAXSIZE must be between {MIN_MAXSIZE} and {MAX_MAXSIZE} entries"
        )
    return value


def xcfgset_args(key: str, duration_s: int | None, maxsize: int | None) -> XCfgSetArgs:
    """XCFGSET from typed values (REST), with the checks the tokens get, in their order."""
    if duration_s is not None:
        _duration(duration_s)
    if maxsize is not None:
        _maxsize(maxsize)
    if duration_s is None and maxsize is None:
        raise WrongArgument.err("At least one parameter must be specified")
    return XCfgSetArgs(key, duration_s, maxsize)


def parse_xcfgset(argv: list[str]) -> XCfgSetArgs:
    duration: int | None = None
    maxsize: int | None = None
    i, n = 2, len(argv)
    while i < n:
        low = argv[i].lower()
        if low not in ("idmp-duration", "idmp-maxsize") or i + 1 >= n:
            raise SyntaxError_()
        if low == "idmp-duration":
            if duration is not None:
                raise WrongArgument.err("IDMP-DURATION specified multiple times")
            duration = _duration(int_arg(argv[i + 1]))
        else:
            if maxsize is not None:
                raise WrongArgument.err("IDMP-MAXSIZE specified multiple times")
            maxsize = _maxsize(int_arg(argv[i + 1]))
        i += 2
    return xcfgset_args(argv[1], duration, maxsize)


def xcfgset(ks: Keyspace, a: XCfgSetArgs) -> Status:
    """Set the stream's IDMP settings; a change forgets every producer's iids."""
    stream = ks.get(a.key)
    if stream is None:
        raise NoSuchKey()
    idmp = stream.idmp if stream.idmp is not None else ks.config.new_idmp()
    duration = idmp.duration_s if a.duration_s is None else a.duration_s
    maxsize = idmp.maxsize if a.maxsize is None else a.maxsize
    idmp.configure(duration, maxsize)
    stream.idmp = idmp
    ks.record(IdmpConfigured(key=a.key, duration_s=duration, maxsize=maxsize))
    return OK


@command("xcfgset", -2, Flag.WRITE, keys=key_at(1))
def _xcfgset(ks: Keyspace, argv: list[str]) -> Status:
    if ks.get(argv[1]) is None:  # Redis looks the key up before it reads the options
        raise NoSuchKey()
    return xcfgset(ks, parse_xcfgset(argv))
