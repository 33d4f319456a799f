"""XREADGROUP and XACK against redis-server: new entries, history, NOACK, deleted entries."""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

INVALID = "ERR Invalid stream ID specified as stream command argument"
DOLLAR = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set."
)
UNBALANCED = (
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
)
ARITY = "ERR wrong number of arguments for 'xreadgroup' command"
NOT_INTEGER = "ERR value is not an integer or out of range"


def _nogroup(key: str, group: str) -> str:
    return (
        f"NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option"
    )


@pytest.fixture
def groups(pair: ExactPair) -> ExactPair:
    """Streams ``s`` (5 entries) and ``t`` (2 entries), each with group ``g`` at 0."""
    pair.fill("s", 5)
    pair.fill("t", 2, "b", "x")
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XGROUP", "CREATE", "t", "g", "0")
    return pair


def _state(pair: ExactPair) -> None:
    pair("XPENDING", "s", "g")
    pair("XPENDING", "s", "g", "-", "+", "100")
    pair("XINFO", "GROUPS", "s")
    pair("XINFO", "CONSUMERS", "s", "g")
    pair("XINFO", "STREAM", "s", "FULL")


def test_new_entries_then_history(groups: ExactPair) -> None:
    """`>` delivers new entries and records them; an ID reads the consumer's own history."""
    groups("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", ">")
    _state(groups)
    for history in ["0", "0-0", "1", "1-0", "2-0", "5-0", "99"]:
        groups("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", history)
    groups("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", "0")
    groups("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "0")
    assert groups("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", "0") == [["s", []]]
    # History reads bump the delivery count.
    _state(groups)
    groups("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    assert groups("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">") is None
    _state(groups)


@pytest.mark.parametrize("count", ["0", "-1", "1", "3", "100"])
def test_count(groups: ExactPair, count: str) -> None:
    """COUNT bounds both `>` and history reads; 0 and negative mean no limit."""
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", count, "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", count, "STREAMS", "s", "0")
    _state(groups)


def test_noack(groups: ExactPair) -> None:
    """NOACK delivers without adding to the PEL, but still advances the group."""
    groups("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">")
    _state(groups)
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "NOACK", "NOACK", "STREAMS", "s", "0")
    _state(groups)


def test_several_streams(groups: ExactPair) -> None:
    """Several keys in one call, mixing `>` and history IDs; empty ones are listed for history."""
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "t", ">", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", "0", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", "s", ">", ">")
    groups("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "t", "0", "0")
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", "0", "2-0")
    groups("XINFO", "GROUPS", "t")
    _state(groups)


def test_deleted_pending_entry_is_id_and_null(groups: ExactPair) -> None:
    """A pending entry deleted from the stream comes back from history as [id, null]."""
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    groups("XDEL", "s", "2-0", "4-0")
    reply = groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    assert ["2-0", None] in reply[0][1]
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "1-0")
    groups("XTRIM", "s", "MAXLEN", "0")
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    _state(groups)


def test_group_read_after_setid_and_new_entries(groups: ExactPair) -> None:
    """After XGROUP SETID back to 0, `>` redelivers and moves ownership of pending entries."""
    groups("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    groups("XGROUP", "SETID", "s", "g", "2")
    groups("XREADGROUP", "GROUP", "g", "c2", "COUNT", "2", "STREAMS", "s", ">")
    _state(groups)
    groups("XADD", "s", "6-0", "f", "v")
    groups("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
    _state(groups)


def test_block_with_data_present(groups: ExactPair) -> None:
    """BLOCK is accepted and returns at once when entries are available."""
    groups("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "BLOCK", "1000", "STREAMS", "s", "0")
    _state(groups)


def test_consumer_created_by_read(groups: ExactPair) -> None:
    """Reading creates the consumer even when nothing is delivered."""
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    groups("XINFO", "CONSUMERS", "s", "g")
    groups("XINFO", "GROUPS", "s")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["GROUP", "g", "c", "STREAMS", "s", "$"], DOLLAR),
        (["GROUP", "g", "c", "STREAMS", "s", "t", "$", "abc"], DOLLAR),
        (["GROUP", "g", "c", "STREAMS", "s", "t", ">", "$"], DOLLAR),
        (["GROUP", "g", "c", "STREAMS", "s", "t", "abc", "$"], INVALID),
        (["GROUP", "g", "c", "STREAMS", "s", "t", ">", "abc"], INVALID),
        (["GROUP", "g", "c", "STREAMS", "s", "abc"], INVALID),
        (["GROUP", "g", "c", "STREAMS", "s", "-"], INVALID),
        (["GROUP", "g", "c", "STREAMS", "s", "(1-0"], INVALID),
        (["GROUP", "g", "c", "STREAMS", "s", ">>"], INVALID),
        (["GROUP", "nog", "c", "STREAMS", "s", ">"], _nogroup("s", "nog")),
        (["GROUP", "nog", "c", "STREAMS", "s", "$"], _nogroup("s", "nog")),
        (["GROUP", "nog", "c", "STREAMS", "s", "abc"], _nogroup("s", "nog")),
        (["GROUP", "g", "c", "STREAMS", "nokey", ">"], _nogroup("nokey", "g")),
        (["GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">"], _nogroup("nokey", "g")),
        (["GROUP", "g", "c", "STREAMS", "u", ">"], _nogroup("u", "g")),
        (["GROUP", "g", "c", "GROUP", "g2", "c2", "STREAMS", "s", "0"], _nogroup("s", "g2")),
        (["GROUP", "g", "c", "STREAMS", "s", "t", ">"], UNBALANCED),
        (["GROUP", "g", "c", "STREAMS", "s", "$", "abc"], UNBALANCED),
        (["GROUP", "g", "c", "COUNT", "abc", "STREAMS", "s", ">"], NOT_INTEGER),
        (["GROUP", "g", "c", "FOO", "STREAMS", "s", ">"], "ERR syntax error"),
        (["GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">"], "ERR timeout is negative"),
        (["GROUP", "g", "STREAMS", "s", ">"], ARITY),
        (["GROUP", "g", "c", "STREAMS", "s"], ARITY),
        (["STREAMS", "s", ">"], ARITY),
        (["COUNT", "1", "STREAMS", "s", ">"], ARITY),
        (
            ["COUNT", "1", "STREAMS", "s", "t", ">", "0"],
            "ERR Missing GROUP option for XREADGROUP",
        ),
    ],
)  # fmt: skip
def test_xreadgroup_errors(groups: ExactPair, args: list[str], expected: str) -> None:
    """XREADGROUP's errors, checked in Redis's order, with its texts; nothing is delivered."""
    groups("XADD", "u", "1-0", "f", "v")
    assert groups("XREADGROUP", *args) == expected
    groups("XPENDING", "s", "g")


def test_readgroup_uses_own_group_position_per_key(groups: ExactPair) -> None:
    """Groups of the same name on different keys are independent."""
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "t", ">")
    groups("XINFO", "GROUPS", "s")
    groups("XINFO", "GROUPS", "t")


# --- XACK ---------------------------------------------------------------------------------


def test_xack(groups: ExactPair) -> None:
    """XACK counts entries actually removed from the PEL, once each."""
    groups("XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "s", ">")
    groups("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
    assert groups("XACK", "s", "g", "1-0", "1-0", "2", "9-0") == 2
    assert groups("XACK", "s", "g", "1-0") == 0
    assert groups("XACK", "s", "g", "5-0", "4-0") == 2
    _state(groups)
    assert groups("XACK", "s", "nog", "3-0") == 0
    assert groups("XACK", "nokey", "g", "3-0") == 0
    assert groups("XACK", "s", "g", "3-0") == 1
    _state(groups)


def test_xack_without_group_ignores_ids(groups: ExactPair) -> None:
    """With no such key or group, XACK replies 0 before it looks at the IDs."""
    assert groups("XACK", "nokey", "g", "abc") == 0
    assert groups("XACK", "s", "nog", "abc", "1-0") == 0


def test_xack_deleted_entry(groups: ExactPair) -> None:
    """Acknowledging an entry already deleted from the stream still removes it from the PEL."""
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    groups("XDEL", "s", "3-0")
    assert groups("XACK", "s", "g", "3-0") == 1
    _state(groups)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "g"], "ERR wrong number of arguments for 'xack' command"),
        (["s"], "ERR wrong number of arguments for 'xack' command"),
        (["s", "g", "abc"], INVALID),
        (["s", "g", "1-0", "abc"], INVALID),
        (["s", "g", "-"], INVALID),
        (["s", "g", "1-*"], INVALID),
    ],
)
def test_xack_errors(groups: ExactPair, args: list[str], expected: str) -> None:
    """An invalid ID fails the whole XACK: nothing is acknowledged."""
    groups("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert groups("XACK", *args) == expected
    groups("XPENDING", "s", "g")
