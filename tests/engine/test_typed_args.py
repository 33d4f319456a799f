"""Typed requests (REST, SSE) and Redis arguments meet the same rule: ``trim_spec`` and
``xsetid_args`` against the option parsers, and a ``~`` clause's default LIMIT decided when
the trim runs (the live stream-node-max-entries), never by the surface that built it."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.commands.streams import parse_xsetid, xsetid_args, xtrim
from app.engine.commands.xadd_options import (
    DEFAULT_LIMIT,
    AddTrimOptions,
    parse_trim_options,
    trim_spec,
)
from app.engine.effects import Trimmed
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.store import Store
from app.engine.stream import TrimSpec, TrimStrategy

# (trim_spec's keywords, the same clause as XTRIM tokens)
CLAUSES: list[tuple[dict[str, Any], list[str]]] = [
    ({"maxlen": 5}, ["MAXLEN", "=", "5"]),
    ({"maxlen": 5, "approximate": True}, ["MAXLEN", "~", "5"]),
    ({"maxlen": 5, "approximate": True, "limit": 7}, ["MAXLEN", "~", "5", "LIMIT", "7"]),
    ({"maxlen": 5, "approximate": True, "limit": 0}, ["MAXLEN", "~", "5", "LIMIT", "0"]),
    ({"minid": "3-1"}, ["MINID", "=", "3-1"]),
    ({"minid": "3", "approximate": True}, ["MINID", "~", "3"]),
    ({"maxlen": -1}, ["MAXLEN", "=", "-1"]),
    ({"maxlen": -1, "minid": "1"}, ["MAXLEN", "=", "-1", "MINID", "=", "1"]),
    ({"maxlen": 1, "minid": "bad"}, ["MAXLEN", "=", "1", "MINID", "=", "bad"]),
    ({"minid": "bad"}, ["MINID", "=", "bad"]),
    ({"maxlen": 5, "limit": 3}, ["MAXLEN", "=", "5", "LIMIT", "3"]),
    ({"maxlen": 5, "approximate": True, "limit": -1}, ["MAXLEN", "~", "5", "LIMIT", "-1"]),
    ({"limit": 3}, ["LIMIT", "3"]),
    ({"limit": 0}, ["LIMIT", "0"]),
    ({}, []),
]


def _outcome(f: Any) -> Any:
    try:
        return f()
    except CommandError as e:
        return (type(e), e.text)


@pytest.mark.parametrize(("kwargs", "tokens"), CLAUSES)
def test_trim_spec_is_the_parsers_rule(
    store: Store, kwargs: dict[str, Any], tokens: list[str]
) -> None:
    ks = store.keyspace

    def typed() -> Any:
        spec = trim_spec(**kwargs)
        return spec.__class__(
            spec.strategy, spec.maxlen, spec.minid, spec.approx,
            100 * ks.config.node_max_entries if spec.limit == DEFAULT_LIMIT else spec.limit,
        )  # fmt: skip

    parsed = _outcome(lambda: parse_trim_options(ks, ["XTRIM", "s", *tokens], xadd=False).trim)
    assert _outcome(typed) == parsed


SETIDS: list[tuple[tuple[str, int | None, str | None], list[str]]] = [
    (("5-0", None, None), ["5-0"]),
    (("5-0", 3, "4-0"), ["5-0", "ENTRIESADDED", "3", "MAXDELETEDID", "4-0"]),
    (("5-0", -1, None), ["5-0", "ENTRIESADDED", "-1"]),
    (("5-0", None, "6-0"), ["5-0", "MAXDELETEDID", "6-0"]),
    (("x", None, None), ["x"]),
    (("5-0", None, "x"), ["5-0", "MAXDELETEDID", "x"]),
]


@pytest.mark.parametrize(("typed", "argv"), SETIDS)
def test_xsetid_args_is_the_parsers_rule(
    typed: tuple[str, int | None, str | None], argv: list[str]
) -> None:
    assert _outcome(lambda: xsetid_args("s", *typed)) == _outcome(
        lambda: parse_xsetid(["XSETID", "s", *argv])
    )


def test_the_default_limit_is_decided_when_the_trim_runs(store: Store) -> None:
    """``~`` without LIMIT: 100 × stream-node-max-entries as configured now (CONFIG SET may
    have changed it since the surface built the clause), and the journal gets that number."""
    spec = trim_spec(maxlen=0, approximate=True)
    assert spec.limit == DEFAULT_LIMIT
    store.execute(["CONFIG", "SET", "stream-node-max-entries", "1"])  # LIMIT 100 by default
    for seq in range(1, 151):
        store.execute(["XADD", "s", f"1-{seq}", "a", "1"])
    ks = store.keyspace
    ks.effects = []
    try:
        assert xtrim(ks, "s", spec) == 100  # one entry per node, 100 at most
        assert [e.trim.limit for e in ks.effects if isinstance(e, Trimmed)] == [100]
    finally:
        ks.effects = None


def test_xadd_options_parse_to_a_typed_record(store: Store) -> None:
    """XADD's options come back as one frozen record (callers read fields, no casts): where
    parsing stopped, the trim clause, and the ID options; XTRIM leaves the ID options unset."""
    ks = store.keyspace
    argv = ["XADD", "s", "NOMKSTREAM", "MAXLEN", "=", "5", "7-*", "f", "v"]
    got = parse_trim_options(ks, argv, xadd=True)
    trim = TrimSpec(TrimStrategy.MAXLEN, 5, StreamID(0, 0), False, 0)
    assert got == AddTrimOptions(6, trim, StreamID(7, 0), seq_given=False, nomkstream=True)
    assert parse_trim_options(ks, ["XADD", "s", "*", "f", "v"], xadd=True) == AddTrimOptions(
        2, None
    )
    assert parse_trim_options(ks, ["XTRIM", "s", "MAXLEN", "5"], xadd=False) == AddTrimOptions(
        4, trim
    )
    with pytest.raises(AttributeError):
        got.nomkstream = False  # type: ignore[misc]
