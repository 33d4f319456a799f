"""Smoke test of ``python -m bench.pipeline``: its functions run end to end on a tiny stream
against the test server and the shared local[2] session, and every figure comes from reading
all the entries. Not a timing test: figures only have to be positive and the counts exact, so
a refactor of the source or the archive cannot silently break the benchmark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import pipeline as bp
from tests.conftest import Commands, Server

N = 3000


@pytest.fixture
def maybe_redis(request: pytest.FixtureRequest) -> Any | None:
    """redis-server (db 9, flushed) for anchor c when it is reachable; the benchmark skips that
    anchor without it, so the smoke test does not depend on it (``real_redis`` still fails
    instead of skipping under XSTREAMS_REQUIRE_SERVICES=1)."""
    try:
        return request.getfixturevalue("real_redis")
    except pytest.skip.Exception:
        return None


@pytest.mark.timeout(180)
def test_pipeline_bench_reads_and_archives_every_entry(
    spark: Any, server: Server, xs: Commands, maybe_redis: Any | None, tmp_path: Path
) -> None:
    plan = bp.Plan(
        entries=N,
        rounds=1,
        warmups=0,
        page_size=500,
        partitions=(1, 2),
        warm_archive=False,
        quick=True,
    )
    figures = bp.run(spark, server.url, server.proc.pid, maybe_redis, plan, tmp_path)

    assert figures["load"]["xstreams"]["entries"] == N
    expected = {"spark_p1", "spark_p2", "spark_count_p2", "http_1", "http_1_arrow", "http_2"}
    if maybe_redis is not None:
        expected.add("redis_1")
    assert set(figures["cells"]) == expected
    for key, cell in figures["cells"].items():
        assert cell["rows"] == N, key
        assert cell["rate"] > 0 and cell["seconds"] > 0, key
        assert cell["machine_cores"] >= 0, key

    plain, trimmed = figures["archive"]
    assert plain["rows"] == trimmed["rows"] == N
    assert plain["rate"] > 0 and trimmed["rate"] > 0
    assert plain["trimmed"] is None and trimmed["trimmed"] == N
    assert len(plain["date_partitions"]) == bp.SPAN_DAYS  # IDs spread over several UTC days
    assert all(seconds >= 0 for seconds in plain["phases_s"].values())
    assert xs("XLEN", bp.TRIM_STREAM) == 0
    assert xs("XLEN", bp.STREAM) == N  # trim=False leaves the stream as it was

    table = bp.markdown(figures)
    assert "Spark read, 2 partitions" in table and "archive trim=True" in table
    report = tmp_path / "PIPELINE.md"
    report.write_text(
        "# prose\n\n" + bp.MARK_START + "\nSTALE TABLE\n" + bp.MARK_END + "\n\nmore prose\n"
    )
    bp.update_report(report, table)
    text = report.read_text()
    assert "STALE TABLE" not in text and "more prose" in text and "Spark read, 1 partition" in text
