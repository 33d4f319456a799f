"""XIDMPRECORD (Redis 8.6.2): record that a producer's idempotent ID names an entry already
in the stream, so a later XADD IDMP with that pair answers the entry's ID and appends nothing.

redis-server 8.6 checks, in this order: the ID (strict: no ``-``, ``+`` or ``*``), a
non-empty producer, a non-empty iid, the key, the entry, then the pair: recorded for this
entry already is OK and changes nothing; recorded for another entry is refused. A new pair
counts in ``iids-added`` and is evicted and expired as an IDMP append's is.

Expiry: as every IDMP write here, the command first forgets the iids that expired by its
clock (``Idmp.expire``), which its journal record replays; redis-server 8.6 forgets them
only on XADD IDMP, so an iid that has expired there but was not forgotten yet still
refuses another entry's ID. Access: ``write``, as XCFGSET.
"""

from __future__ import annotations

from typing import NamedTuple

from app.engine.commands.table import Flag, command, key_at
from app.engine.effects import IdmpRecorded
from app.engine.errors import Conflict, NoSuchKey, NotFound, WrongArgument
from app.engine.ids import StreamID, parse_strict_id
from app.engine.keyspace import Keyspace
from app.engine.replies import OK, Status

NO_PRODUCER = "ERR producer ID must be non-empty"
NO_IID = "ERR idempotent ID must be non-empty"
NO_ENTRY = "ERR No such message in stream"
OTHER_ENTRY = "ERR IID already exists for this producer with a different stream ID"


class XIdmpRecordArgs(NamedTuple):
    key: str
    producer: str
    iid: str
    id: StreamID


def xidmprecord_args(key: str, producer: str, iid: str, sid: StreamID) -> XIdmpRecordArgs:
    """XIDMPRECORD from typed values, with the checks its tokens get after the ID."""
    if not producer:
        raise WrongArgument(NO_PRODUCER)
    if not iid:
        raise WrongArgument(NO_IID)
    return XIdmpRecordArgs(key, producer, iid, sid)


def parse_xidmprecord(argv: list[str]) -> XIdmpRecordArgs:
    sid = parse_strict_id(argv[4])
    return xidmprecord_args(argv[1], argv[2], argv[3], sid)


def xidmprecord(ks: Keyspace, a: XIdmpRecordArgs) -> Status:
    """Record the pair for the entry ``a.id`` (see the module docstring)."""
    stream = ks.get(a.key)
    if stream is None:
        raise NoSuchKey()
    if not stream.exists(a.id):
        raise NotFound(NO_ENTRY)
    now = ks.clock.now_ms()
    idmp = stream.idmp
    if idmp is not None:
        idmp.expire(now)
        seen = idmp.lookup(a.producer, a.iid)
        if seen == a.id:
            return OK
        if seen is not None:
            raise Conflict(OTHER_ENTRY)
    else:
        idmp = stream.idmp = ks.config.new_idmp()
    idmp.record(a.producer, a.iid, a.id, now, ks.config.idmp_max_producers)
    ks.record(IdmpRecorded(key=a.key, producer=a.producer, iid=a.iid, id=a.id, now_ms=now))
    return OK


@command("xidmprecord", 5, Flag.WRITE, keys=key_at(1))
def _xidmprecord(ks: Keyspace, argv: list[str]) -> Status:
    return xidmprecord(ks, parse_xidmprecord(argv))
