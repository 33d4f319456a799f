"""DUMP and RESTORE: a stream in Redis's serialized form, to and from redis-server 7.0.

RESTORE ``key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]``
checks in ``restoreCommand``'s order and words: options (IDLETIME and FREQ exclude each
other and are validated, then ignored: they only steer eviction, which xstreams does not do),
BUSYKEY, the TTL, the payload's footer ("DUMP payload version or checksum are wrong"), its
body ("Bad data format"). Only then is the old key replaced.

TTL: xstreams has no key expiry. A TTL of 0 restores the stream for good, as in Redis. An
ABSTTL time already past restores nothing, as in Redis (an old key is still replaced, so it
is deleted) and answers OK. Any TTL that would leave a key to expire later is refused with
an error saying so, rather than keeping a stream that redis-server would have dropped: a
caller migrating keys with expiry must learn they would not expire here.

A payload of another key type (a string, a hash...) is refused: every key here is a stream.
The journal keeps the payload itself (``StreamRestored``): decoding it again rebuilds the
same nodes, counters and groups without deciding anything.
"""

from __future__ import annotations

from app.engine.commands.args import eq, int_arg
from app.engine.commands.table import Flag, command, key_at
from app.engine.effects import StreamRestored
from app.engine.errors import CommandError, SyntaxError_, WrongArgument
from app.engine.keyspace import Keyspace
from app.engine.listpack import utf8
from app.engine.rdb import BadPayload, NotAStream, dump_stream, load_stream
from app.engine.rdbio import PayloadVersionError, TooLarge
from app.engine.replies import OK, Status
from app.engine.stream import Stream

W, R = Flag.WRITE, Flag.READONLY

NO_EXPIRY = (
    "ERR xstreams keeps no key expiry: RESTORE takes a TTL of 0 (or an ABSTTL time already"
    " past), not one that would expire the key later"
)


@command("dump", 2, R, keys=key_at(1))
def _dump(ks: Keyspace, argv: list[str]) -> str | None:
    """DUMP: the stream as a payload redis-server 7.0 RESTOREs; nil for a missing key.
    Refused past ``max_restore_bytes``, what RESTORE takes: encoding holds the loop as long
    as decoding does, and DUMP needs only read access."""
    s = ks.get(argv[1])
    if s is None:
        return None
    if any(g.released for g in s.groups.values()):
        # Redis 7.0's stream type has no unowned pending entry; writing one would make a
        # payload RESTORE refuses, and giving it an owner would change what it is.
        raise WrongArgument.err(
            "DUMP cannot encode entries released by XNACK in a Redis 7.0 payload: claim"
            " or acknowledge them first"
        )
    if s.idmp is not None:
        # Redis 7.0's stream type has no IDMP state; a payload without it would RESTORE a
        # stream that appends again what this one would answer as a repeat.
        raise WrongArgument.err(
            "DUMP cannot encode a stream's IDMP state (XADD IDMP, XCFGSET) in a Redis 7.0 payload"
        )
    try:
        payload = dump_stream(s, ks.limits.restore_bytes)
    except TooLarge:
        raise ks.limits.dump_refusal() from None
    return payload.decode("utf-8", "surrogateescape")


def decode_payload(ks: Keyspace, payload: bytes) -> Stream:
    """The stream a payload holds, sized by the keyspace's node limits, or RESTORE's error.
    The decoding work is bounded by the keyspace's limits (replay does not come here: a
    payload once accepted is replayed whatever the limits are now)."""
    config, limits = ks.config, ks.limits
    try:
        return load_stream(
            payload,
            config.node_max_entries,
            config.node_max_bytes,
            limits.restore_expanded,
            limits.restore_node_entries,
        )
    except TooLarge as big:  # each clause its own name: compiled (mypyc), a name has one type
        raise limits.restore_refusal(big) from None
    except PayloadVersionError:
        raise CommandError.err("DUMP payload version or checksum are wrong") from None
    except NotAStream as kind:
        raise CommandError.err(
            f"Bad data format: the payload holds a {kind.type_name}, "
            "and xstreams keeps streams only"
        ) from None
    except BadPayload:
        raise CommandError.err("Bad data format") from None


@command("restore", -4, W, keys=key_at(1))
def _restore(ks: Keyspace, argv: list[str]) -> Status:
    """RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]. See the
    module docstring for TTL: 0, or an ABSTTL already past; a later expiry is refused."""
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):
        more = len(argv) - j - 1
        if eq(argv[j], "replace"):
            replace = True
        elif eq(argv[j], "absttl"):
            absttl = True
        elif eq(argv[j], "idletime") and more >= 1 and freq == -1:
            idle = int_arg(argv[j + 1])
            if idle < 0:
                raise CommandError.err("Invalid IDLETIME value, must be >= 0")
            j += 1
        elif eq(argv[j], "freq") and more >= 1 and idle == -1:
            freq = int_arg(argv[j + 1])
            if freq < 0 or freq > 255:
                raise CommandError.err("Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise SyntaxError_()
        j += 1
    key = argv[1]
    if not replace and key in ks.streams:
        raise CommandError("BUSYKEY Target key name already exists.")
    ttl = int_arg(argv[2])
    if ttl < 0:
        raise CommandError.err("Invalid TTL value, must be >= 0")
    try:
        payload = utf8(argv[3])
    except UnicodeEncodeError:  # not bytes a client could send: no payload either
        raise CommandError.err("DUMP payload version or checksum are wrong") from None
    ks.limits.check_restore(len(payload))
    stream = decode_payload(ks, payload)
    consumers = max((len(g.consumers) for g in stream.groups.values()), default=0)
    ks.limits.check_restored(len(stream.groups), consumers)
    expired = absttl and 0 < ttl <= ks.clock.now_ms()  # checkAlreadyExpired
    if ttl and not expired:
        raise CommandError(NO_EXPIRY)
    if replace:
        ks.delete(key)
    if expired:
        return OK
    ks.streams[key] = stream
    ks.record(StreamRestored(key=key, payload=payload))
    ks.blocked.signal(key)
    return OK
