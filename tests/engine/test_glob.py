"""Redis glob patterns (``stringmatchlen``) as KEYS, SCAN MATCH and name filters use them.

Every row was checked on redis-server 7.0.15: each name in NAMES created with
``XADD <name> 1-1 f v``, then ``KEYS <pattern>`` compared with the row's expected set.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.engine.glob import glob_match
from app.engine.store import Store
from tests.engine.helpers import run

NAMES = [
    "a", "b", "c", "d", "x", "ab", "abc", "abd", "xyz", "é", "aé",
    "hello", "hallo", "hillo", "hllo", "heeello", "h]llo", "h-llo", "h\\llo",
    "*", "a*", "a*b", "?", "[", "[a", "]", "a]", "\\", "a\\b", "^", "-", "-a", "b-", "a-c",
    "ab[c", "foo.bar",
]  # fmt: skip

SINGLE_ASCII = {"a", "b", "c", "d", "x", "*", "?", "[", "]", "\\", "^", "-"}
HELLOS = {"hello", "hallo", "hillo", "h]llo", "h-llo", "h\\llo"}

TABLE: list[tuple[str, set[str]]] = [
    ("*", set(NAMES)),
    ("***", set(NAMES)),
    ("?*", set(NAMES)),
    ("*?*", set(NAMES)),
    ("?", SINGLE_ASCII),  # byte-wise: "é" is two bytes
    ("??", {"ab", "a*", "a]", "-a", "[a", "b-", "é"}),
    ("a?", {"ab", "a*", "a]"}),
    ("a*", {n for n in NAMES if n.startswith("a")}),
    ("*b", {"b", "ab", "a*b", "a\\b"}),
    ("*a*", {n for n in NAMES if "a" in n}),
    ("x*z", {"xyz"}),
    ("x*y*z", {"xyz"}),
    ("h*llo", HELLOS | {"hllo", "heeello"}),
    ("*llo", HELLOS | {"hllo", "heeello"}),
    ("h?llo", HELLOS),
    ("foo.bar", {"foo.bar"}),  # '.' is literal
    ("foo?bar", {"foo.bar"}),
    # classes
    ("[abc]", {"a", "b", "c"}),
    ("h[ae]llo", {"hallo", "hello"}),
    ("[^a]", SINGLE_ASCII - {"a"}),
    ("[^ab]", SINGLE_ASCII - {"a", "b"}),
    ("h[^e]llo", HELLOS - {"hello"}),
    ("[!a]", {"a"}),  # '!' is no negation for Redis: the class is '!' or 'a'
    ("[a-c]", {"a", "b", "c"}),
    ("[c-a]", {"a", "b", "c"}),  # a reversed range is swapped
    ("[a-c]*", {n for n in NAMES if n[0] in "abc"}),
    ("[a-c]b", {"ab"}),
    ("h[a-b]llo", {"hallo"}),
    ("[a-c-e]", {"a", "b", "c", "-"}),  # range a-c, then '-', then 'e'
    ("[-a]", {"-", "a"}),
    ("[a-]", {"a", "]", "^"}),  # "a-]" is a reversed range ']'..'a'; the class is unclosed
    ("[^-]", SINGLE_ASCII - {"-"}),
    ("[é]", set()),  # bytes: a one-byte class cannot match a two-byte name
    ("[[]", {"["}),
    # escapes
    ("\\*", {"*"}),
    ("a\\*", {"a*"}),
    ("a\\*b", {"a*b"}),
    ("*\\*", {"*", "a*"}),
    ("\\?", {"?"}),
    ("\\[", {"["}),
    ("ab\\[c", {"ab[c"}),
    ("h\\llo", {"hllo"}),  # an escaped ordinary character is itself
    ("a\\\\b", {"a\\b"}),
    ("\\", {"\\"}),  # a trailing backslash is literal
    ("a\\", set()),
    ("[\\]]", {"]"}),
    ("[\\-]", {"-"}),
    ("[a\\-c]", {"a", "-", "c"}),  # an escaped '-' is no range
    ("[^\\]]", SINGLE_ASCII - {"]"}),
    ("h[\\\\]llo", {"h\\llo"}),
    # unclosed '[' and empty classes
    ("[", set()),
    ("a[", set()),
    ("[a", {"a"}),  # an unclosed class still matches its members
    ("ab[c", {"abc"}),
    ("h[a", set()),
    ("[a-", {"a", "-"}),
    ("[\\]", {"]"}),
    ("[]", set()),
    ("[]]", set()),
    ("[]a]", set()),
    ("h[]llo", set()),
    ("[^]", SINGLE_ASCII),  # an empty negated class matches any one byte
    ("[^]a]", set()),
]


@pytest.mark.parametrize(("pattern", "expected"), TABLE)
def test_glob_table(pattern: str, expected: set[str]) -> None:
    assert {n for n in NAMES if glob_match(pattern, n)} == expected


@pytest.fixture
def named(store: Store) -> Store:
    for name in NAMES:
        run(store, "XADD", name, "1-1", "f", "v")
    return store


@pytest.mark.parametrize(("pattern", "expected"), TABLE)
def test_keys_uses_the_glob(named: Store, pattern: str, expected: set[str]) -> None:
    keys = run(named, "KEYS", pattern)
    assert sorted(keys) == sorted(expected)
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(("pattern", "expected"), TABLE[::4])
def test_scan_match_uses_the_glob(named: Store, pattern: str, expected: set[str]) -> None:
    found: list[str] = []
    cursor = "0"
    while True:
        page = run(named, "SCAN", cursor, "MATCH", pattern, "COUNT", "7")
        found += page.keys
        cursor = str(page.cursor)
        if cursor == "0":
            break
    assert sorted(set(found)) == sorted(expected)


@pytest.mark.parametrize(
    ("pattern", "string", "expected"),
    [
        ("", "", True),
        ("", "a", False),
        ("*", "", False),  # stringmatchlen never matches "" with '*' (KEYS * is a fast path)
        ("**", "", False),
        ("?", "", False),
        ("a*", "a", True),
        ("*a", "", False),
        ("[a]", "", False),
        ("\\", "", False),
        ("a" + "*" * 30 + "b", "a" + "x" * 40, False),  # many stars, no match, still fast
        ("*a*a*a*a*a*a*a*b", "a" * 60, False),
        ("*a*a*a*a*a*a*a*b", "a" * 60 + "b", True),
        ("h[a-z][0-9]", "hb7", True),
        ("h[a-z][0-9]", "hB7", False),  # case-sensitive
        ("HELLO", "hello", False),
    ],
)
def test_glob_edges(pattern: str, string: str, expected: bool) -> None:
    assert glob_match(pattern, string) is expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    # checked on redis-server 7.0.15 with only the key "" (XADD "" 1-1 f v)
    [("*", [""]), ("", [""]), ("**", []), ("?*", []), ("[a]*", [])],
)
def test_the_empty_key(store: Store, pattern: str, expected: list[str]) -> None:
    run(store, "XADD", "", "1-1", "f", "v")
    assert run(store, "KEYS", pattern) == expected
    assert run(store, "SCAN", "0", "MATCH", pattern).keys == expected


@pytest.mark.parametrize(
    ("pattern", "string", "expected"),
    [
        ("*a" * 1000, "a" * 1000, True),  # 1000 nested '*': within Redis's limit
        ("*a" * 1001, "a" * 1001, False),  # 1001: Redis's nesting guard says no match
        ("*a" * 1001, "a" * 5000, False),
        ("*" * 100_000, "anything", True),
        ("a*" * 50_000, "a" * 50_000, False),
        ("[" * 100_000, "[", True),  # an unclosed class: its bytes are the class
        ("\\" * 100_001, "\\" * 50_000, False),
    ],
    ids=lambda v: f"{str(v)[:10]}..{len(v)}" if isinstance(v, str) else str(v),
)
def test_long_patterns_match_without_recursion(pattern: str, string: str, expected: bool) -> None:
    """Patterns far longer than Python's recursion limit answer (checked on redis-server
    7.0.15) instead of raising RecursionError, which the service used to answer with a 500."""
    assert glob_match(pattern, string) is expected


@settings(max_examples=300, deadline=None)
@example(names=["é", "\udcc3x"], pattern="\udcc3*")  # byte C3 then anything: both match
@given(
    names=st.lists(st.text(alphabet="ab:é\udcc3\udca9*?[]\\", max_size=6), max_size=25),
    pattern=st.text(alphabet="ab:é\udcc3*?[]^-\\", max_size=6),
)
def test_keys_finds_what_matching_every_key_finds(names: list[str], pattern: str) -> None:
    """KEYS looks only at the names sharing a pattern's literal prefix: it must find exactly
    the keys the glob matches among all of them (byte-level, lone surrogates included)."""
    store = Store()
    for name in set(names):
        run(store, "XADD", name, "1-1", "f", "v")
    # KEYS * takes every key, "" too (Redis's fast path: see test_the_empty_key)
    expected = sorted(n for n in set(names) if pattern == "*" or glob_match(pattern, n))
    assert sorted(run(store, "KEYS", pattern)) == expected


def test_keys_by_prefix_sees_keys_created_renamed_and_deleted() -> None:
    store = Store()
    for name in ("orders:1", "orders:2", "order", "ordersx", "users:1"):
        run(store, "XADD", name, "1-1", "f", "v")
    run(store, "RENAME", "users:1", "orders:3")
    run(store, "DEL", "orders:2")
    assert sorted(run(store, "KEYS", "orders:*")) == ["orders:1", "orders:3"]
    assert run(store, "KEYS", "order") == ["order"]
    run(store, "FLUSHALL")
    assert run(store, "KEYS", "orders:*") == []
