"""The archive job: what it writes, and that archive + stream always equals the original.

Crashes are simulated by making one step of the job raise, leaving the files, the manifest and
the stream exactly as a process killed at that point would; the next run must repair that.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.pipeline.conftest import need

# app.pipeline imports pyarrow: without it, skip the module (or fail: see conftest).
need("pyarrow")

from app.pipeline import archive as job  # noqa: E402
from app.pipeline.archive import ArchiveError, archive, parse_cutoff  # noqa: E402
from app.pipeline.files import Files  # noqa: E402
from app.pipeline.report import read_archive  # noqa: E402
from tests.conftest import Commands, Server  # noqa: E402
from tests.support.targets import every_target  # noqa: E402

DAY0 = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)
HOUR = 3_600_000
Entry = tuple[str, tuple[tuple[str, str], ...]]


class SimulatedCrash(RuntimeError):
    pass


def entries(xs: Commands, stream: str) -> list[Entry]:
    return [(i, tuple(zip(f[0::2], f[1::2], strict=True))) for i, f in
            xs("XRANGE", stream, "-", "+")]  # fmt: skip


def archived(spark: Any, out: Path, stream: str = "events") -> list[Entry]:
    if not any(p.suffix == ".parquet" for p in out.rglob("*") if "_" not in p.parts[-3][:1]):
        return []
    rows = read_archive(spark, str(out)).where(f"stream = '{stream}'").collect()
    got = [(r.id, tuple((p.field, p.value) for p in r.pairs)) for r in rows]
    return sorted(got, key=lambda e: tuple(map(int, e[0].split("-"))))


@pytest.fixture
def original(xs: Commands) -> list[Entry]:
    """60 entries, one every 2 hours from 2026-11-01 00:00 UTC: five UTC days."""
    for i in range(60):
        xs("XADD", "events", f"{DAY0 + i * 2 * HOUR}-{i % 2}",
           "kind", "ab"[i % 2], "n", i, "kind", "again")  # fmt: skip
    xs("XADD", "other", "1-1", "x", "1")
    return entries(xs, "events")


def run(spark: Any, server: Server, out: Path, before: str, **kw: Any) -> job.ArchiveResult:
    return archive(spark, server.url, "events", before, str(out), partitions=3, **kw)


def assert_whole(spark: Any, xs: Commands, out: Path, original: list[Entry]) -> None:
    """Archive plus what remains in the stream is the original: nothing lost, nothing archived
    twice (an entry archived but not yet trimmed is in both)."""
    kept, stored = archived(spark, out), entries(xs, "events")
    assert len({e[0] for e in kept}) == len(kept)
    assert sorted(set(kept) | set(stored)) == sorted(original)


def cutoff_at(i: int) -> str:
    """The ID of the i-th entry: entries 0..i-1 are below it."""
    return f"{DAY0 + i * 2 * HOUR}-{i % 2}"


def test_archives_entries_below_the_cutoff_by_stream_and_utc_date(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    result = run(spark, server, out, cutoff_at(30))
    assert result.rows == 30
    assert (result.first, result.through) == (original[0][0], original[29][0])
    assert archived(spark, out) == original[:30]
    assert entries(xs, "events") == original  # no --trim: the stream is untouched
    dates = sorted(p.name for p in (out / "stream=events").iterdir())
    assert dates == [f"date=2026-11-0{d}" for d in (1, 2, 3)]
    rows = read_archive(spark, str(out)).collect()
    for r in rows:  # each row sits in the UTC day of its ID's milliseconds
        day = datetime.fromtimestamp(r.ms / 1000, UTC).strftime("%Y-%m-%d")
        assert r.date == day and r.stream == "events"
    assert {r.id for r in rows if r.id == original[0][0]}
    assert not (out / "_staging").exists() or not any((out / "_staging").iterdir())


@every_target
def test_a_rerun_after_success_archives_nothing_twice(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    run(spark, server, out, cutoff_at(20))
    again = run(spark, server, out, cutoff_at(20))
    # everything below the cutoff is archived: the mark is the ID just before it
    mark = f"{DAY0 + 40 * HOUR - 1}-{2**64 - 1}"
    assert (again.rows, again.run, again.archived_through) == (0, None, mark)
    assert archived(spark, out) == original[:20]
    later = run(spark, server, out, cutoff_at(45))  # only what is new below the later cutoff
    assert (later.rows, later.first) == (25, original[20][0])
    assert archived(spark, out) == original[:45]


def test_trim_removes_exactly_what_was_archived(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    result = run(spark, server, out, cutoff_at(33), trim=True)
    assert (result.rows, result.trimmed) == (33, 33)
    assert entries(xs, "events") == original[33:]
    assert archived(spark, out) == original[:33]
    assert entries(xs, "other") == [("1-1", (("x", "1"),))]
    again = run(spark, server, out, cutoff_at(33), trim=True)
    assert (again.rows, again.trimmed) == (0, 0)
    assert_whole(spark, xs, out, original)


def test_trim_never_passes_a_lower_cutoff_of_a_rerun(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    run(spark, server, out, cutoff_at(40))
    result = run(spark, server, out, cutoff_at(10), trim=True)
    assert (result.rows, result.trimmed) == (0, 10)
    assert entries(xs, "events") == original[10:]
    assert_whole(spark, xs, out, original)


def test_a_cutoff_above_the_last_entry_archives_everything_and_stops_there(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    result = run(spark, server, out, "99999999999999", trim=True)
    assert (result.rows, result.trimmed, result.through) == (60, 60, original[-1][0])
    late = xs("XADD", "events", "*", "kind", "late")  # arrives after the run: stays
    again = run(spark, server, out, "99999999999999")
    assert (again.rows, again.first) == (1, late)


def test_an_age_cutoff_counts_back_from_now(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    now = DAY0 + 4 * 24 * HOUR  # 2026-11-05 00:00: the first two days are more than 2d old
    result = archive(spark, server.url, "events", "2d", str(tmp_path / "a"), now_ms=lambda: now)
    assert result.rows == 24 and result.cutoff == f"{DAY0 + 2 * 24 * HOUR}-0"
    assert parse_cutoff("90m", 10 * HOUR) == (10 * HOUR - 90 * 60_000, 0)
    assert parse_cutoff("1700000000000", 0) == (1_700_000_000_000, 0)
    with pytest.raises(ArchiveError, match="--before must be an entry ID"):
        parse_cutoff("last tuesday", 0)


def test_crash_between_write_and_trim_then_rerun(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out = tmp_path / "archive"

    def crash(*_: Any) -> int:
        raise SimulatedCrash("killed before XTRIM")

    monkeypatch.setattr(job, "_trim", crash)
    with pytest.raises(SimulatedCrash):
        run(spark, server, out, cutoff_at(25), trim=True)
    assert entries(xs, "events") == original  # committed, not trimmed
    assert archived(spark, out) == original[:25]
    monkeypatch.undo()
    result = run(spark, server, out, cutoff_at(25), trim=True)
    assert (result.rows, result.trimmed) == (0, 25)
    assert entries(xs, "events") == original[25:]
    assert_whole(spark, xs, out, original)


def test_crash_before_the_commit_is_rolled_back(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out = tmp_path / "archive"

    def crash(*_: Any) -> None:
        raise SimulatedCrash("killed before the manifest")

    monkeypatch.setattr(Files, "write_json", crash)
    with pytest.raises(SimulatedCrash):
        run(spark, server, out, cutoff_at(25), trim=True)
    assert any((out / "_staging").rglob("*.parquet"))  # written, not committed
    assert archived(spark, out) == []
    assert entries(xs, "events") == original
    monkeypatch.undo()
    result = run(spark, server, out, cutoff_at(25), trim=True)
    assert len(result.recovered) == 1 and result.rows == 25 and result.trimmed == 25
    assert not any((out / "_staging").rglob("*.parquet"))
    assert_whole(spark, xs, out, original)


def test_crash_while_publishing_is_rolled_forward(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out = tmp_path / "archive"
    moves: list[str] = []
    real_rename = Files.rename

    def rename_once(self: Files, src: str, dst: str) -> None:
        if moves:
            raise SimulatedCrash("killed after the first file moved")
        moves.append(dst)
        real_rename(self, src, dst)

    monkeypatch.setattr(Files, "rename", rename_once)
    with pytest.raises(SimulatedCrash):
        run(spark, server, out, cutoff_at(50))
    monkeypatch.undo()
    assert 0 < len(archived(spark, out)) < 50  # a reader sees part of a committed run
    result = run(spark, server, out, cutoff_at(50), trim=True)
    assert len(result.recovered) == 1 and result.rows == 0 and result.trimmed == 50
    assert archived(spark, out) == original[:50]
    assert_whole(spark, xs, out, original)


def test_a_failed_verification_commits_nothing(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out = tmp_path / "archive"
    real = job._verify
    monkeypatch.setattr(job, "_verify", lambda s, st, n, lo, hi: real(s, st, n + 1, lo, hi))
    with pytest.raises(ArchiveError, match="read 21 entries but wrote 20"):
        run(spark, server, out, cutoff_at(20), trim=True)
    assert entries(xs, "events") == original
    assert not (out / "_xstreams" / "runs").exists() or not any((out / "_xstreams/runs").iterdir())


def test_a_stream_name_with_glob_characters_is_read_alone(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    xs("XADD", "logs[eu]*", "1-1", "a", "1")
    xs("XADD", "logs[eu]x", "1-1", "b", "2")
    xs("XADD", "logse", "1-1", "c", "3")
    result = archive(spark, server.url, "logs[eu]*", "2", str(tmp_path / "a"))
    assert result.rows == 1
    rows = read_archive(spark, str(tmp_path / "a")).collect()
    assert [(r.stream, r.id, r.fields) for r in rows] == [("logs[eu]*", "1-1", {"a": "1"})]


def test_a_missing_stream_is_an_error(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    with pytest.raises(ArchiveError, match="stream 'nope' does not exist"):
        archive(spark, server.url, "nope", "1", str(tmp_path / "a"))


def test_the_command_line(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    from app.cli import cli

    out = str(tmp_path / "archive")
    args = ["archive", "--stream", "events", "--before", cutoff_at(12), "--out", out,
            "--url", server.url, "--trim", "--master", "local[2]"]  # fmt: skip
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert "archived 12 entries of 'events'" in done.stdout and "trimmed 12" in done.stdout
    assert entries(xs, "events") == original[12:]
    bad = CliRunner().invoke(cli, [*args[:4], "yesterday", *args[5:]])
    assert bad.exit_code == 2 and "--before must be an entry ID" in bad.output
    missing = CliRunner().invoke(cli, ["archive", "--stream", "nope", *args[3:]])
    assert missing.exit_code == 1 and "stream 'nope' does not exist" in missing.output


def test_the_command_line_archives_each_stream_a_glob_matches(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    from app.cli import cli
    from app.pipeline.archive import streams_matching

    for s in ("m-1", "m-2", "n-1"):
        for i in range(1, 4):
            xs("XADD", s, f"{i}-1", "s", s)
    out = str(tmp_path / "archive")
    args = ["archive", "--stream", "m-*", "--before", "3", "--out", out, "--url", server.url,
            "--trim", "--master", "local[2]"]  # fmt: skip
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert "archived 2 entries of 'm-1'" in done.stdout
    assert "archived 2 entries of 'm-2'" in done.stdout
    rows = read_archive(spark, out).collect()
    assert sorted((r.stream, r.id) for r in rows) == [
        ("m-1", "1-1"), ("m-1", "2-1"), ("m-2", "1-1"), ("m-2", "2-1"),
    ]  # fmt: skip
    assert [xs("XLEN", s) for s in ("m-1", "m-2", "n-1")] == [1, 1, 3]
    none = CliRunner().invoke(cli, ["archive", "--stream", "zz-*", *args[3:]])
    assert none.exit_code == 1 and "no stream matches 'zz-*'" in none.output
    assert streams_matching(server.url, None, r"m-\*") == ["m-*"]  # an escaped literal name


def test_one_run_at_a_time_and_a_dead_runs_lock_is_taken_over(
    spark: Any, server: Server, xs: Commands, original: list[Entry], tmp_path: Path
) -> None:
    import json
    import socket
    import subprocess

    out = tmp_path / "archive"
    lock = out / "_xstreams" / "lock"
    lock.parent.mkdir(parents=True)
    live = {"host": socket.gethostname(), "pid": os.getpid(), "since": "earlier"}
    lock.write_text(json.dumps(live))
    with pytest.raises(ArchiveError, match=r"another archive run holds .*lock"):
        run(spark, server, out, cutoff_at(10), trim=True)
    assert entries(xs, "events") == original and archived(spark, out) == []

    with subprocess.Popen(["true"]) as dead:  # a pid that has exited
        dead.wait()
    lock.write_text(json.dumps({**live, "pid": dead.pid}))
    assert run(spark, server, out, cutoff_at(10), trim=True).rows == 10
    assert not lock.exists()  # released after the run
    assert_whole(spark, xs, out, original)
