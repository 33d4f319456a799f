"""``xstreams tail``: live entries, resuming across a service restart, consuming a group."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.client.support import json_lines, ok, run
from tests.conftest import Commands, Server, stop_process
from tests.support.waiting import parked, until


def test_tail_prints_entries_appended_after_it_starts(server: Server, xs: Commands) -> None:
    xs("XADD", "live", "1-1", "old", "x")  # before the tail: not printed (from `$`)

    def append() -> None:
        parked(server, 1, what="the tail's subscription")
        for i in range(3):
            xs("XADD", "live", "*", "n", str(i))

    writer = threading.Thread(target=append)
    writer.start()
    out = ok(server.url, "tail", "live", "--count", "3", "--json")
    writer.join()
    assert [e["fields"] for e in json_lines(out)] == [{"n": "0"}, {"n": "1"}, {"n": "2"}]


def test_tail_of_a_stream_not_yet_created_prints_its_first_entries(
    server: Server, xs: Commands
) -> None:
    def append() -> None:
        parked(server, 1, what="the tail's subscription")
        xs("XADD", "later", "*", "n", "0")

    writer = threading.Thread(target=append)
    writer.start()
    out = ok(server.url, "tail", "later", "--count", "1")
    writer.join()
    assert out.split()[1:] == ["n=0"]


def test_tail_from_an_id_prints_history_first(server: Server, xs: Commands) -> None:
    for i in range(1, 4):
        xs("XADD", "hist", f"{i}-0", "n", str(i))
    out = ok(server.url, "tail", "hist", "--from", "1-0", "--count", "2")
    assert [line.split()[0] for line in out.splitlines()] == ["2-0", "3-0"]


def test_tail_through_a_group_acks_what_it_printed(server: Server, xs: Commands) -> None:
    for i in range(4):
        xs("XADD", "work", "*", "n", str(i))
    ok(server.url, "groups", "create", "work", "g", "--from", "0")
    taken = []
    for consumer in ("c1", "c2"):  # --count 2 takes two: the others stay for the next consumer
        out = ok(server.url, "tail", "work", "--group", "g", "--consumer", consumer, "--count=2")
        taken += [line.split()[1] for line in out.splitlines()]
        assert xs("XPENDING", "work", "g")[0] == 0
    assert taken == ["n=0", "n=1", "n=2", "n=3"]
    assert run(server.url, "tail", "work", "--group", "nogroup", "--consumer", "c").exit_code == 1


@pytest.mark.parametrize(
    "through", [[], ["--group", "g", "--consumer", "c"]], ids=["stream", "group"]
)
def test_tail_resumes_after_the_service_restarts(tmp_path: Path, through: list[str]) -> None:
    """Every entry exactly once, in order, though the service went away mid-tail; through a
    group, every one acknowledged."""
    first = Server(tmp_path)
    url, port = first.url, first.port
    if through:
        setup = Commands(url)
        assert setup("XGROUP", "CREATE", "orders", "g", "0", "MKSTREAM") == "OK"
        setup.client.close()
    cmd = [sys.executable, "-m", "app.cli", "tail", "orders", "--from", "0", "--count", "6",
           "--json", "--url", url, *through]  # fmt: skip
    errors = (tmp_path / "tail.err").open("w+")
    tail = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True)
    stdout = tail.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")))
    reader.start()
    second: Server | None = None
    try:
        before = Commands(url)
        for i in range(3):
            before("XADD", "orders", "*", "n", str(i))
        until(lambda: len(lines) == 3, what="the tail printed the first three")
        before.client.close()
        first.stop()
        second = Server(tmp_path, port=port)
        after = Commands(url)
        for i in range(3, 6):
            after("XADD", "orders", "*", "n", str(i))
        assert tail.wait(30) == 0, (tmp_path / "tail.err").read_text()
        reader.join()
        if through:
            assert after("XPENDING", "orders", "g")[0] == 0
        after.client.close()
    finally:
        if tail.poll() is None:
            stop_process(tail)
        reader.join()
        stdout.close()
        errors.close()
        first.stop()
        if second is not None:
            second.stop()
    entries = json_lines("".join(lines))
    assert [e["fields"]["n"] for e in entries] == [str(i) for i in range(6)]
    assert len({e["id"] for e in entries}) == 6
    assert "reconnecting" in (tmp_path / "tail.err").read_text()  # it did lose the service
