"""The client's REST commands against a live service: what a person or a script sees."""

from __future__ import annotations

import json
from pathlib import Path

from tests.client.support import json_lines, ok, run
from tests.conftest import Commands, Server


def test_add_then_range_round_trips_fields_in_order(server: Server, xs: Commands) -> None:
    first = ok(server.url, "add", "orders", "item=book", "qty=2").strip()
    second = ok(server.url, "add", "orders", "item=pen", "note=a=b", "--json")
    entries = json_lines(ok(server.url, "range", "orders", "--json"))
    assert [e["fields"] for e in entries] == [
        {"item": "book", "qty": "2"},
        {"item": "pen", "note": "a=b"},
    ]
    assert [e["id"] for e in entries] == [first, json.loads(second)["ids"][0]]
    human = ok(server.url, "range", "orders", "--rev", "--count", "1")
    assert human.split() == [entries[1]["id"], "item=pen", "note=a=b"]


def test_add_reads_json_lines_from_stdin_and_trims(server: Server, xs: Commands) -> None:
    lines = "\n".join(json.dumps({"n": str(i)}) for i in range(7))
    out = json.loads(ok(server.url, "add", "many", "--batch", "3", "--json", stdin=lines))
    assert len(out["ids"]) == 7
    ok(server.url, "add", "many", "n=7", "--maxlen", "5")
    assert [e["fields"]["n"] for e in json_lines(ok(server.url, "range", "many", "--json"))] == [
        "3", "4", "5", "6", "7",
    ]  # fmt: skip


def test_a_stream_holding_a_slash_is_named_as_written(server: Server, xs: Commands) -> None:
    """The client quotes a name as one path segment (``/`` as ``%2F``): the key the /ds
    surface makes for ``/ds/v1/stream/orders`` is added to and read by its name."""
    first = ok(server.url, "add", "v1/stream/orders", "item=book").strip()
    assert xs("XRANGE", "v1/stream/orders", "-", "+") == [[first, ["item", "book"]]]
    entries = json_lines(ok(server.url, "range", "v1/stream/orders", "--json"))
    assert [e["id"] for e in entries] == [first]


def test_range_pages_past_the_services_page_size(server: Server, xs: Commands) -> None:
    xs("XADD", "big", "1-1", "f", "v")
    lines = "\n".join(json.dumps({"id": f"2-{i}", "fields": {"i": str(i)}}) for i in range(1500))
    ok(server.url, "add", "big", stdin=lines)
    got = json_lines(ok(server.url, "range", "big", "2-0", "+", "--json"))
    assert [e["id"] for e in got] == [f"2-{i}" for i in range(1500)]
    assert len(json_lines(ok(server.url, "range", "big", "--json", "--count", "1200"))) == 1200


def test_ls_and_info(server: Server, xs: Commands) -> None:
    for name in ("a1", "a2", "b1"):
        xs("XADD", name, "*", "f", "v")
    listed = json.loads(ok(server.url, "ls", "--json", "--count", "1"))  # pages joined
    assert sorted(s["name"] for s in listed["streams"]) == ["a1", "a2", "b1"]
    matched = json.loads(ok(server.url, "ls", "--match", "a*", "--json"))
    assert sorted(s["name"] for s in matched["streams"]) == ["a1", "a2"]
    assert "b1" in ok(server.url, "ls")
    info = json.loads(ok(server.url, "info", "a1", "--json"))
    assert info["length"] == 1 and info["first_entry"]["fields"] == {"f": "v"}
    assert "length" in ok(server.url, "info", "a1")


def test_groups_pending_and_claim_on_a_real_group(server: Server, xs: Commands) -> None:
    ids = [xs("XADD", "jobs", "*", "task", str(i)) for i in range(3)]
    ok(server.url, "groups", "create", "jobs", "workers", "--from", "0")
    groups = json.loads(ok(server.url, "groups", "list", "jobs", "--json"))["groups"]
    assert [(g["name"], g["lag"]) for g in groups] == [("workers", 3)]
    xs("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "3", "STREAMS", "jobs", ">")
    pending = json.loads(ok(server.url, "pending", "jobs", "workers", "--json"))
    assert pending["count"] == 3
    assert [e["id"] for e in pending["entries"]] == ids
    assert {e["consumer"] for e in pending["entries"]} == {"alice"}
    claimed = json.loads(ok(server.url, "claim", "jobs", "workers", "bob", ids[0], "--json"))
    assert [e["id"] for e in claimed["entries"]] == [ids[0]]
    auto = ok(server.url, "claim", "jobs", "workers", "carol", "--count", "5")
    assert [line.split()[0] for line in auto.splitlines()] == ids
    human = ok(server.url, "pending", "jobs", "workers", "--consumer", "carol")
    assert "3 pending" in human and "carol" in human
    ok(server.url, "groups", "delete", "jobs", "workers")
    assert json.loads(ok(server.url, "groups", "list", "jobs", "--json"))["groups"] == []


def test_a_missing_stream_exits_1_with_the_services_detail(server: Server, xs: Commands) -> None:
    result = run(server.url, "info", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: stream 'nope' does not exist"
    assert result.stdout == ""


def test_an_unreachable_service_exits_3(xs: Commands) -> None:
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = run(url, "range", "orders")
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: cannot reach {url}")


def test_a_usage_error_exits_2(server: Server) -> None:
    result = run(server.url, "add", "orders", "no-equals-sign")
    assert result.exit_code == 2
    assert "field=value" in result.stderr


def test_the_token_is_sent(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--token", "s3cret")
    try:
        refused = run(srv.url, "add", "t", "f=v")
        assert refused.exit_code == 1 and refused.stderr.startswith("error: ")
        ok(srv.url, "add", "t", "f=v", token="s3cret")
        assert json_lines(ok(srv.url, "range", "t", "--json", token="s3cret"))[0]["fields"] == {
            "f": "v"
        }
    finally:
        srv.stop()
