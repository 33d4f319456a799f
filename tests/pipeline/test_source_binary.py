"""The Spark source and bytes that are not UTF-8: shown as ``\\udcNN`` text, or exact bytes.

The source read U+FFFD for every such byte (two different values read the same, silently).
By default a string column now shows each such byte as the six characters ``\\udcNN``; with
``binary=true`` field values are Spark ``binary`` holding the exact bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.pipeline.conftest import need

# app.pipeline imports pyarrow: without it, skip the module (or fail: see conftest).
pa = need("pyarrow")

from app.pipeline.options import OptionError, parse_options  # noqa: E402
from app.pipeline.schema import BINARY_ARROW_SCHEMA, entries_batch  # noqa: E402
from tests.conftest import Commands, Server  # noqa: E402
from tests.support.targets import every_target  # noqa: E402

VALUE = b"\xff\x00\xc3\xa9\x80"  # a stray byte, NUL, é, a stray continuation byte
SHOWN = "\\udcff\x00é\\udc80"  # the same in a Spark string


def raw(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def test_arrow_batches_show_or_keep_the_bytes() -> None:
    entries = [["1-1", [raw(b"f\xfe"), raw(VALUE), "n", "1"]], ["1-2", ["n", "2"]]]
    text = entries_batch(raw(b"s\xff"), entries).to_pylist()
    assert text[0]["stream"] == "s\\udcff"
    assert text[0]["pairs"] == [{"field": "f\\udcfe", "value": SHOWN}, {"field": "n", "value": "1"}]
    exact = entries_batch(raw(b"s\xff"), entries, binary=True)
    assert exact.schema == BINARY_ARROW_SCHEMA
    rows = exact.to_pylist()
    assert rows[0]["pairs"] == [
        {"field": "f\\udcfe", "value": VALUE},
        {"field": "n", "value": b"1"},
    ]
    assert dict(rows[0]["fields"]) == {"f\\udcfe": VALUE, "n": b"1"}
    assert rows[1]["fields"] == [("n", b"2")]
    repeated = entries_batch("s", [["1-1", ["a", raw(b"\xfe"), "a", raw(VALUE)]]], binary=True)
    assert repeated.column("fields").to_pylist() == [[("a", VALUE)]]
    assert repeated.column("fields").type == pa.map_(pa.string(), pa.binary())


def test_the_binary_option_is_a_boolean() -> None:
    assert parse_options({"url": "http://x", "stream": "s", "binary": "TRUE"}).binary
    assert not parse_options({"url": "http://x", "stream": "s"}).binary
    with pytest.raises(OptionError, match="binary must be true or false"):
        parse_options({"url": "http://x", "stream": "s", "binary": "yes"})


@pytest.fixture
def odd(server: Server, xs: Commands) -> str:
    """Stream ``odd\\xff``: one entry with bytes that are not UTF-8, one plain."""
    import httpx

    r = httpx.get(f"{server.url}/xadd/odd%FF/1-1/f%FE/%FF%00%C3%A9%80/n/1")
    assert r.json() == {"result": "1-1"}
    assert xs("XADD", "odd-plain", "1-2", "n", "2") == "1-2"
    return server.url


def load(spark: Any, url: str, **options: str) -> list[Any]:
    reader = spark.read.format("xstreams").option("url", url).option("stream", "odd*")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load().orderBy("id").collect()


def test_default_strings_show_each_byte(spark: Any, odd: str) -> None:
    rows = load(spark, odd)
    assert [(r.stream, r.id) for r in rows] == [("odd\\udcff", "1-1"), ("odd-plain", "1-2")]
    assert [(p.field, p.value) for p in rows[0].pairs] == [("f\\udcfe", SHOWN), ("n", "1")]
    assert rows[0].fields == {"f\\udcfe": SHOWN, "n": "1"}


@every_target
def test_binary_values_are_the_exact_bytes(spark: Any, odd: str) -> None:
    rows = load(spark, odd, binary="true")
    assert [(p.field, bytes(p.value)) for p in rows[0].pairs] == [("f\\udcfe", VALUE), ("n", b"1")]
    assert {k: bytes(v) for k, v in rows[0].fields.items()} == {"f\\udcfe": VALUE, "n": b"1"}
    assert [(p.field, bytes(p.value)) for p in rows[1].pairs] == [("n", b"2")]
