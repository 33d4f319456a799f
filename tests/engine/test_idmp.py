"""XADD IDMP / IDMPAUTO and XCFGSET (Redis 8.6) on a manual clock: the window, the size,
the counters, and what survives trims, deletes and renames. redis-server 8.6 answered each
case first (tests/differential/test_redis8_idmp.py compares the two)."""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.errors import CommandError
from app.engine.idmp import IdmpInfo
from app.engine.replies import StreamInfo
from app.engine.store import Store


def _idmp(store: Store, key: str = "s") -> IdmpInfo | None:
    info = store.execute(["XINFO", "STREAM", key])
    assert isinstance(info, StreamInfo)
    return info.header.idmp


def test_a_repeat_answers_the_first_id_and_appends_nothing(store: Store) -> None:
    first = store.execute(["XADD", "s", "IDMP", "p", "i1", "*", "f", "v"])
    assert store.execute(["XADD", "s", "IDMP", "p", "i1", "MAXLEN", "0", "*", "f", "w"]) == first
    assert store.execute(["XLEN", "s"]) == 1  # no entry and no trim
    other = store.execute(["XADD", "s", "IDMP", "q", "i1", "*", "f", "v"])
    assert other != first  # iids are per producer
    assert _idmp(store) == IdmpInfo(100, 100, 2, 2, 2, 1)


def test_idmpauto_derives_the_iid_from_the_pairs_in_any_order(store: Store) -> None:
    a = store.execute(["XADD", "s", "IDMPAUTO", "p", "*", "a", "1", "b", "2"])
    assert store.execute(["XADD", "s", "IDMPAUTO", "p", "*", "b", "2", "a", "1"]) == a
    for fields in (["ab", "1"], ["a", "b1"], ["a", "1", "a", "1"], ["a", "1"]):
        assert store.execute(["XADD", "s", "IDMPAUTO", "p", "*", *fields]) != a
    assert store.execute(["XADD", "s", "IDMPAUTO", "q", "*", "a", "1", "b", "2"]) != a


def test_a_stream_without_idmp_state_answers_as_redis_7(store: Store) -> None:
    store.execute(["XADD", "s", "*", "f", "v"])
    assert _idmp(store) is None
    assert store.execute(["DUMP", "s"]) is not None


def test_an_iid_is_forgotten_after_the_duration(store: Store, clock: ManualClock) -> None:
    store.execute(["XADD", "s", "*", "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-DURATION", "2"])
    first = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    clock.advance(1999)
    assert store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"]) == first
    assert _idmp(store) == IdmpInfo(2, 100, 1, 1, 1, 1)
    clock.advance(1)
    assert _idmp(store) == IdmpInfo(2, 100, 0, 0, 1, 1)  # a read forgets nothing, counts live
    again = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    assert again != first
    assert _idmp(store) == IdmpInfo(2, 100, 1, 1, 2, 1)


def test_maxsize_evicts_a_producers_oldest_iid(store: Store, clock: ManualClock) -> None:
    store.execute(["XADD", "s", "*", "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-MAXSIZE", "2"])
    ids = []
    for i in ("i1", "i2", "i3"):
        clock.advance(1)
        ids.append(store.execute(["XADD", "s", "IDMP", "p", i, "*", "f", "v"]))
    store.execute(["XADD", "s", "IDMP", "q", "i1", "*", "f", "v"])
    assert store.execute(["XADD", "s", "IDMP", "p", "i3", "*", "f", "v"]) == ids[2]
    assert store.execute(["XADD", "s", "IDMP", "p", "i1", "*", "f", "v"]) != ids[0]
    assert _idmp(store) == IdmpInfo(100, 2, 2, 3, 5, 1)


def test_xcfgset_forgets_iids_only_when_a_setting_changes(store: Store) -> None:
    first = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    assert store.execute(["XCFGSET", "s", "IDMP-DURATION", "100"]) == "OK"
    assert store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"]) == first
    store.execute(["XCFGSET", "s", "IDMP-DURATION", "50", "IDMP-MAXSIZE", "100"])
    assert _idmp(store) == IdmpInfo(50, 100, 0, 0, 1, 1)  # the counters stay


def test_a_repeat_still_answers_after_its_entry_is_gone(store: Store) -> None:
    first = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    store.execute(["XDEL", "s", str(first)])
    store.execute(["XTRIM", "s", "MAXLEN", "0"])
    store.execute(["RENAME", "s", "t"])
    assert store.execute(["XADD", "t", "IDMP", "p", "i", "*", "f", "v"]) == first
    assert store.execute(["XLEN", "t"]) == 0
    store.execute(["DEL", "t"])
    store.execute(["XADD", "t", "IDMP", "p", "i", "*", "f", "v"])
    assert store.execute(["XLEN", "t"]) == 1  # a new stream has no IDMP state


def test_nomkstream_creates_nothing(store: Store) -> None:
    assert store.execute(["XADD", "s", "NOMKSTREAM", "IDMP", "p", "i", "*", "f", "v"]) is None
    assert store.execute(["EXISTS", "s"]) == 0


def test_dump_refuses_a_stream_with_idmp_state(store: Store) -> None:
    store.execute(["XADD", "s", "*", "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-MAXSIZE", "100"])  # state, even at the defaults
    with pytest.raises(CommandError, match="IDMP state"):
        store.execute(["DUMP", "s"])


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["XADD", "s", "IDMP", "p", "i", "1-1", "f", "v"], "only with auto-generated IDs"),
        (["XADD", "s", "IDMPAUTO", "p", "0-0", "f", "v"], "only with auto-generated IDs"),
        (["XADD", "s", "IDMP", "p", "", "*", "f", "v"], "non-empty idempotent ID"),
        (["XADD", "s", "IDMP", "", "i", "*", "f", "v"], "IDMP requires a non-empty producer"),
        (["XADD", "s", "IDMPAUTO", "", "*", "f", "v"], "IDMPAUTO requires a non-empty producer"),
        (["XADD", "s", "IDMP", "p", "i", "IDMPAUTO", "p", "*", "f", "v"], "multiple times"),
        (["XCFGSET", "s"], "no such key"),
    ],
)
def test_errors(store: Store, argv: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=error):
        store.execute(argv)


def test_xidmprecord_names_an_entry_for_a_later_idmp_append(store: Store) -> None:
    """XIDMPRECORD (8.6.2): the pair then answers that entry's ID; recording it again is OK,
    for another entry refused; a new pair counts in iids-added, a repeat in nothing."""
    first = store.execute(["XADD", "s", "*", "f", "v"])
    second = store.execute(["XADD", "s", "*", "f", "w"])
    assert _idmp(store) is None
    assert store.execute(["XIDMPRECORD", "s", "p", "i", str(first)]) == "OK"
    assert store.execute(["XIDMPRECORD", "s", "p", "i", str(first)]) == "OK"
    with pytest.raises(CommandError, match=r"^ERR IID already exists for this producer with a "):
        store.execute(["XIDMPRECORD", "s", "p", "i", str(second)])
    assert store.execute(["XIDMPRECORD", "s", "q", "i", str(second)]) == "OK"
    assert store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "x"]) == first
    assert store.execute(["XLEN", "s"]) == 2
    assert _idmp(store) == IdmpInfo(100, 100, 2, 2, 2, 1)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["XIDMPRECORD", "s", "p", "i"], "wrong number of arguments for 'xidmprecord' command"),
        (["XIDMPRECORD", "none", "", "", "bad"], "Invalid stream ID specified as stream command"),
        (["XIDMPRECORD", "none", "", "i", "+"], "Invalid stream ID specified as stream command"),
        (["XIDMPRECORD", "none", "", "", "1-1"], "producer ID must be non-empty"),
        (["XIDMPRECORD", "none", "p", "", "1-1"], "idempotent ID must be non-empty"),
        (["XIDMPRECORD", "none", "p", "i", "1-1"], "no such key"),
        (["XIDMPRECORD", "s", "p", "i", "9-9"], "No such message in stream"),
        (["XIDMPRECORD", "s", "p", "i", "1"], "No such message in stream"),
    ],
)
def test_xidmprecord_checks_in_redis_order(store: Store, argv: list[str], error: str) -> None:
    store.execute(["XADD", "s", "1-1", "f", "v"])
    with pytest.raises(CommandError, match=f"^ERR {error}"):
        store.execute(argv)


def test_config_sets_the_idmp_values_new_idmp_state_starts_with(store: Store) -> None:
    """CONFIG SET stream-idmp-duration / -maxsize: streams that get IDMP state from then on
    start with them; a stream's own values stay."""
    store.execute(["XADD", "old", "IDMP", "p", "i", "*", "f", "v"])
    assert store.execute(["CONFIG", "SET", "stream-idmp-duration", "50"]) == "OK"
    assert store.execute(["CONFIG", "SET", "stream-idmp-maxsize", "7"]) == "OK"
    assert store.execute(["CONFIG", "GET", "stream-idmp-*"]) == [
        "stream-idmp-maxsize",
        "7",
        "stream-idmp-duration",
        "50",
    ]
    store.execute(["XADD", "new", "IDMP", "p", "i", "*", "f", "v"])
    old, new = _idmp(store, "old"), _idmp(store, "new")
    assert old is not None and (old.idmp_duration, old.idmp_maxsize) == (100, 100)
    assert new is not None and (new.idmp_duration, new.idmp_maxsize) == (50, 7)
    with pytest.raises(CommandError, match="argument must be between 1 and 86400 inclusive"):
        store.execute(["CONFIG", "SET", "stream-idmp-duration", "0"])
