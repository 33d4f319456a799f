"""Batch reads through the ``xstreams`` data source agree with XRANGE over the same range."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REDIS_HOST, REDIS_PORT, TARGET_REDIS_DB, Commands, Server
from tests.support.targets import REDIS_PARAMS, every_target_with


def load(spark: Any, url: str, stream: str, **options: Any) -> Any:
    reader = spark.read.format("xstreams").option("url", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def as_entries(rows: list[Any]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    return [(r.stream, r.id, [(p.field, p.value) for p in r.pairs]) for r in rows]


def xrange(xs: Commands, stream: str, start: str = "-", end: str = "+") -> list[Any]:
    return [(stream, i, list(zip(f[0::2], f[1::2], strict=True))) for i, f in
            xs("XRANGE", stream, start, end)]  # fmt: skip


@pytest.fixture
def three_streams(xs: Commands) -> dict[str, int]:
    """Entries spread over time, several per millisecond, and a key that is not a stream."""
    sizes = {"orders-eu": 500, "orders-us": 333, "orders-asia": 1}
    adds = []  # one request: 834 round trips cost seconds on the Redis targets
    for n, (stream, size) in enumerate(sizes.items()):
        for i in range(size):
            ms = 1_700_000_000_000 + (i // 3) * 7 + n
            adds.append(["XADD", stream, f"{ms}-{i % 3}", "n", str(i), "stream", stream])
    r = xs.client.post("/pipeline", json=adds)
    assert r.status_code == 200 and all("result" in a for a in r.json()), r.text[:200]
    xs("XADD", "payments", "*", "x", "1")
    return sizes


@every_target_with("partitions", [1, 2, 4, 7], on_redis=[4])
def test_glob_read_equals_xrange_for_any_partition_count(
    spark: Any, server: Server, xs: Commands, three_streams: dict[str, int], partitions: int
) -> None:
    df = load(spark, server.url, "orders-*", partitions=partitions, pageSize=64)
    rows = df.orderBy("stream", "ms", "seq").collect()
    expected = sorted(
        (e for s in three_streams for e in xrange(xs, s)),
        key=lambda e: (e[0], *map(int, e[1].split("-"))),
    )
    assert as_entries(rows) == expected
    assert df.rdd.getNumPartitions() == partitions
    first = rows[0]
    assert (first.ms, first.seq) == tuple(map(int, first.id.split("-")))
    assert first.fields == dict((p.field, p.value) for p in first.pairs)


def test_partitions_hold_disjoint_contiguous_id_ranges(
    spark: Any, server: Server, xs: Commands, three_streams: dict[str, int]
) -> None:
    from pyspark.sql import functions as F

    df = load(spark, server.url, "orders-eu", partitions=4, pageSize=50)
    per_part = (
        df.withColumn("p", F.spark_partition_id())
        .groupBy("p")
        .agg(
            F.count("*").alias("n"),
            F.min(F.struct("ms", "seq")).alias("lo"),
            F.max(F.struct("ms", "seq")).alias("hi"),
        )
        .orderBy("p")
        .collect()
    )
    assert len(per_part) == 4
    assert sum(r.n for r in per_part) == three_streams["orders-eu"]
    for a, b in itertools.pairwise(per_part):
        assert tuple(a.hi) < tuple(b.lo)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("1700000000100", "1700000000200"),  # incomplete IDs: whole milliseconds
        ("(1700000000105-1", "(1700000000700-0"),  # exclusive bounds
        ("1700000000105-2", "+"),
        ("-", "1700000000000-1"),
        ("1800000000000", "+"),  # after the last entry: empty
    ],
)
def test_start_and_end_take_xrange_syntax(
    spark: Any, server: Server, xs: Commands, three_streams: dict[str, int], start: str, end: str
) -> None:
    rows = load(spark, server.url, "orders-eu", start=start, end=end, partitions=3).collect()
    got = sorted(as_entries(rows), key=lambda e: tuple(map(int, e[1].split("-"))))
    assert got == xrange(xs, "orders-eu", start, end)


def test_repeated_field_names_keep_every_pair_in_order(
    spark: Any, server: Server, xs: Commands
) -> None:
    xs("XADD", "dups", "1-1", "a", "1", "b", "2", "a", "3", "é", "ü✓")
    xs("XADD", "dups", "2-1", "same", "x", "same", "x")
    rows = load(spark, server.url, "dups").orderBy("id").collect()
    assert [(p.field, p.value) for p in rows[0].pairs] == [
        ("a", "1"), ("b", "2"), ("a", "3"), ("é", "ü✓"),
    ]  # fmt: skip
    assert rows[0].fields == {"a": "3", "b": "2", "é": "ü✓"}  # the last value of a name wins
    assert [(p.field, p.value) for p in rows[1].pairs] == [("same", "x"), ("same", "x")]
    assert rows[1].fields == {"same": "x"}


def test_a_glob_that_matches_nothing_is_empty(spark: Any, server: Server, xs: Commands) -> None:
    xs("XADD", "other", "*", "a", "1")
    assert load(spark, server.url, "orders-*").count() == 0


def test_entries_added_after_planning_are_not_read(
    spark: Any, server: Server, xs: Commands
) -> None:
    """The read is a snapshot: ``+`` means the last entry when the read was planned."""
    for i in range(1, 11):
        xs("XADD", "live", f"{i}-0", "i", i)
    df = load(spark, server.url, "live", partitions=2)
    # Planning happens when the DataFrame's plan is built; an action runs it.
    plan_rows = df.collect()
    assert [r.id for r in plan_rows] == [f"{i}-0" for i in range(1, 11)]


def failure(spark: Any, url: str, stream: str, **options: Any) -> str:
    with pytest.raises(Exception) as info:
        load(spark, url, stream, **options).collect()
    return str(info.value)


def test_a_missing_stream_is_an_error_not_an_empty_read(
    spark: Any, server: Server, xs: Commands
) -> None:
    assert "stream 'nope' does not exist" in failure(spark, server.url, "nope")
    xs("XADD", "s", "*", "a", "1")
    xs("DEL", "s")
    assert "does not exist" in failure(spark, server.url, "s")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"partitons": 4}, "unknown option(s) partitons"),
        ({"partitions": 0}, "option partitions must be between 1 and 10000"),
        ({"partitions": "many"}, "option partitions must be an integer"),
        ({"pageSize": -1}, "option pagesize must be between"),
        ({"start": "abc"}, "option start is not a valid stream ID"),
        ({"end": "(0-0"}, "option end is not a valid stream ID"),
        ({"startingPosition": "soon"}, "option startingPosition must be latest, earliest"),
        ({"failOnDataLoss": "maybe"}, "option failondataloss must be true or false"),
    ],
)
def test_bad_options_are_named(
    spark: Any, server: Server, xs: Commands, options: dict[str, Any], message: str
) -> None:
    xs("XADD", "s", "*", "a", "1")
    assert message in failure(spark, server.url, "s", **options)


def test_url_is_required_and_checked(spark: Any) -> None:
    with pytest.raises(Exception, match="option url is required"):
        spark.read.format("xstreams").option("stream", "s").load().collect()
    assert "must be an http:// or https:// URL" in failure(spark, "localhost:1", "s")


def test_an_unreachable_service_is_named_after_the_retries(spark: Any) -> None:
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    text = failure(spark, url, "s", retries=1)
    assert f"cannot reach {url}" in text and "gave up after 2 attempts" in text


def test_a_token_protected_service(spark: Any, tmp_path: Path) -> None:
    srv = Server(tmp_path, "--token", "s3cret")
    try:
        writer = Commands(srv.url, "s3cret")
        writer("XADD", "s", "1-1", "a", "1")
        writer.client.close()
        assert "refused the request (401)" in failure(spark, srv.url, "s")
        assert "refused the request (401)" in failure(spark, srv.url, "s", token="wrong")
        rows = load(spark, srv.url, "s", token="s3cret").collect()
        assert [(r.id, r.fields) for r in rows] == [("1-1", {"a": "1"})]
    finally:
        srv.stop()


def test_a_key_of_another_type_is_named(spark: Any, server: Server, xs: Commands) -> None:
    from app.pipeline.client import Client
    from app.pipeline.options import parse_options
    from app.pipeline.reading import matching_streams

    class Typed(Client):
        def __call__(self, *args: str | int) -> Any:
            return "string" if args[0] == "TYPE" else super().__call__(*args)

    with Typed(server.url) as client, pytest.raises(Exception, match="is a string, not a"):
        matching_streams(client, parse_options({"url": server.url, "stream": "k"}))


@pytest.mark.parametrize("target", REDIS_PARAMS[:1], indirect=True, scope="session")
def test_a_real_key_of_another_type_in_front_of_redis(server: Server, xs: Commands) -> None:
    """In front of Redis, other applications' keys may share the database (the embedded
    engine holds streams only, hence the stand-ins above): a glob passes them over, naming
    one is an error."""
    import redis

    from app.pipeline.client import Client, SourceError
    from app.pipeline.options import parse_options
    from app.pipeline.reading import matching_streams

    xs("XADD", "orders-eu", "1-1", "a", "1")
    other = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=TARGET_REDIS_DB)  # the server's
    other.set("orders-cache", "x")
    other.close()
    with Client(server.url) as client:
        glob = parse_options({"url": server.url, "stream": "orders-*"})
        assert matching_streams(client, glob) == ["orders-eu"]
        named = parse_options({"url": server.url, "stream": "orders-cache"})
        with pytest.raises(SourceError, match=r"key 'orders-cache' at .* is a string, not a"):
            matching_streams(client, named)
