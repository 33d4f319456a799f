"""``classify``: redis-server's error texts become the classes the engine raises with them.

The texts were captured from redis-server 7.0 (``redis-cli`` against a scratch database), so
the Redis backend's errors get the statuses the embedded engine's get. The second table checks
the other side of the same promise: the engine raises each text with the class ``classify``
gives it, so the two never drift apart.
"""

from __future__ import annotations

import pytest

from app.engine.errors import (
    BusyGroup,
    CommandError,
    Conflict,
    NoGroup,
    NoSuchConsumer,
    NoSuchEntry,
    NoSuchKey,
    NotFound,
    SyntaxError_,
    TooLarge,
    TooMany,
    Unblocked,
    WrongArgument,
    WrongType,
    classify,
)
from app.engine.limits import Limits
from app.engine.store import Store

# (text from redis-server 7.0, the class it is)
REDIS_TEXTS: list[tuple[str, type[CommandError]]] = [
    ("ERR no such key", NoSuchKey),
    ("NOGROUP No such key 'nokey' or consumer group 'g'", NoGroup),
    (
        "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option",
        NoGroup,
    ),
    ("NOGROUP No such consumer group 'nog' for key name 's'", NoGroup),
    ("NOGROUP the consumer group this client was blocked on no longer exists", NoGroup),
    ("UNBLOCKED the stream key no longer exists", Unblocked),
    (
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
        "to use the MKSTREAM option to create an empty stream automatically.",
        NotFound,
    ),
    ("BUSYGROUP Consumer Group name already exists", BusyGroup),
    ("ERR The ID specified in XADD is equal or smaller than the target stream top item", Conflict),
    ("ERR The ID specified in XSETID is smaller than the target stream top item", Conflict),
    (
        "ERR The entries_added specified in XSETID is smaller than the target stream length",
        Conflict,
    ),
    ("ERR The stream has exhausted the last possible ID, unable to add more items", Conflict),
    ("WRONGTYPE Operation against a key holding the wrong kind of value", WrongType),
    ("ERR Elements are too large to be stored", TooLarge),
    ("ERR syntax error", SyntaxError_),
    # from redis-server 8.6 (XDELEX, XACKDEL, XREADGROUP ... CLAIM) and the XNACK page
    ("ERR Number of IDs must be a positive integer", WrongArgument),
    ("ERR The `numids` parameter must match the number of arguments", WrongArgument),
    ("ERR min-idle-time must be a positive integer", WrongArgument),
    ("ERR min-idle-time is not an integer or out of range", WrongArgument),
    (
        "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead.",
        WrongArgument,
    ),
    ("ERR Invalid RETRYCOUNT option argument for XNACK", WrongArgument),
    ("ERR syntax error, LIMIT cannot be used without the special ~ option", WrongArgument),
    ("ERR wrong number of arguments for 'xadd' command", WrongArgument),
    ("ERR value is not an integer or out of range", WrongArgument),
    ("ERR Invalid stream ID specified as stream command argument", WrongArgument),
    ("ERR invalid start ID for the interval", WrongArgument),
    ("ERR The ID specified in XADD must be greater than 0-0", WrongArgument),
    ("ERR The MAXLEN argument must be >= 0.", WrongArgument),
    ("ERR timeout is negative", WrongArgument),
    (
        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
        WrongArgument,
    ),
    ("ERR Unrecognized XCLAIM option 'bogus'", WrongArgument),
    ("ERR COUNT must be > 0", WrongArgument),
    ("ERR value for ENTRIESREAD must be positive or -1", WrongArgument),
    (
        "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
        WrongArgument,
    ),
    ("ERR unknown subcommand 'foo'. Try XGROUP HELP.", WrongArgument),
    ("ERR unknown command 'foo', with args beginning with: ", WrongArgument),
    ("ERR invalid cursor", WrongArgument),
]

# xstreams' own texts (REST lookups, the service's limits): the same table covers them.
OWN_TEXTS: list[tuple[str, type[CommandError]]] = [
    ("ERR no such entry", NoSuchEntry),
    ("ERR no such consumer 'alice' in group 'g'", NoSuchConsumer),
    (
        "ERR XRANGE reply would hold more than 10 entries (max_reply_entries): read it in pages "
        "with COUNT 10 or less",
        TooLarge,
    ),
    (
        "ERR too many keys: XREAD names 3 streams, at most 2 are allowed (max_read_keys)",
        TooLarge,
    ),
    ("ERR too many consumer groups: key 's' holds at most 2 (max_stream_groups)", TooMany),
    ("ERR too many consumers: group 'g' holds at most 2 (max_group_consumers)", TooMany),
    (
        "ERR RESTORE payload holds 3 consumer groups: at most 2 are allowed (max_stream_groups)",
        TooMany,
    ),
]


@pytest.mark.parametrize(("text", "cls"), REDIS_TEXTS + OWN_TEXTS)
def test_classify(text: str, cls: type[CommandError]) -> None:
    e = classify(text)
    assert type(e) is cls
    assert e.text == text  # the text itself is kept byte for byte


def test_unknown_texts_stay_plain() -> None:
    for text in ("LOADING Redis is loading the dataset in memory", "ERR something new"):
        e = classify(text)
        assert type(e) is CommandError and e.text == text


# (command, class the engine raises): each error above, as the engine makes it.
ENGINE_CASES: list[tuple[list[str], type[CommandError]]] = [
    (["XINFO", "STREAM", "nokey"], NoSuchKey),
    (["XSETID", "nokey", "1-0"], NoSuchKey),
    (["XPENDING", "nokey", "g"], NoGroup),
    (["XGROUP", "CREATECONSUMER", "s", "nog", "c"], NoGroup),
    (["XGROUP", "CREATE", "nokey", "g", "0"], NotFound),
    (["XGROUP", "CREATE", "s", "g", "0"], BusyGroup),
    (["XADD", "s", "5-0", "a", "1"], Conflict),
    (["XSETID", "s", "1-0"], Conflict),
    (["XSETID", "s", "6-0", "ENTRIESADDED", "0"], Conflict),
    (["XADD", "s", "0-0", "a", "1"], WrongArgument),
    (["XRANGE", "s", "x", "+"], WrongArgument),
    (["XRANGE", "s", "-", "+", "COUNT", "x"], WrongArgument),
    (["XADD", "s", "MAXLEN", "-1", "*", "a", "1"], WrongArgument),
    (["XTRIM", "s", "MAXLEN", "1", "LIMIT", "5"], WrongArgument),
    (["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"], WrongArgument),
    (["XSETID", "s", "9-0", "MAXDELETEID", "10-0"], SyntaxError_),
    (["XSETID", "s", "9-0", "MAXDELETEDID", "10-0"], WrongArgument),
    (["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"], WrongArgument),
    (["XGROUP", "FOO"], WrongArgument),
    (["FOO"], WrongArgument),
    (["SCAN", "x"], WrongArgument),
]


@pytest.mark.parametrize(("argv", "cls"), ENGINE_CASES)
def test_engine_raises_what_classify_says(
    store: Store, argv: list[str], cls: type[CommandError]
) -> None:
    store.execute(["XADD", "s", "5-0", "a", "1"])
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    with pytest.raises(CommandError) as caught:
        store.execute(argv)
    assert type(caught.value) is cls
    assert type(classify(caught.value.text)) is cls


def test_caps_are_raised_as_classify_says() -> None:
    """The caps on groups and consumers: a conflict with the state met (409 on REST), raised
    and classified alike, so the Redis backend's refusals answer as the engine's do."""
    store = Store()
    store.keyspace.limits = Limits(stream_groups=1, group_consumers=1)
    store.execute(["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
    store.execute(["XGROUP", "CREATECONSUMER", "s", "g", "a"])
    for argv in (["XGROUP", "CREATE", "s", "h", "$"], ["XGROUP", "CREATECONSUMER", "s", "g", "b"]):
        with pytest.raises(TooMany) as caught:
            store.execute(argv)
        assert type(classify(caught.value.text)) is TooMany
        assert isinstance(caught.value, Conflict)


def test_exhausted_and_too_large(store: Store) -> None:
    store.execute(["XADD", "s", "5-18446744073709551615", "a", "1"])
    with pytest.raises(TooLarge):
        store.execute(["XADD", "s", "5-*", "a", "1"])
    store.execute(["XADD", "s", "18446744073709551615-18446744073709551615", "a", "1"])
    with pytest.raises(Conflict) as caught:
        store.execute(["XADD", "s", "*", "a", "1"])
    assert type(classify(caught.value.text)) is Conflict
