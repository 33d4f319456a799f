"""``/metrics``: scraped with Prometheus's text parser while the test writes, reads and
subscribes, the figures move as they should; only the admin or a ``metrics`` key reads them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from tests.api.inproc import serve
from tests.conftest import Server
from tests.observe.support import Samples, labels_of, parse, scraped, value

ADMIN = "admin-token-for-metrics"
ROUTE = "/v1/streams/{stream}/entries"


def _key(data: Path, name: str, *flags: str) -> str:
    result = CliRunner().invoke(
        cli, ["keys", "create", "--name", name, *flags, "--data-dir", str(data)]
    )
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """A durable service with a token, a ``metrics`` key and a read-only key, per-group
    series on for ``orders-*``."""
    data = tmp_path_factory.mktemp("metrics")
    keys = {
        "prometheus": _key(data, "prometheus", "--metrics"),
        "reader": _key(data, "reader", "--read", "*"),
    }
    srv = Server(
        data,
        env={"XSTREAMS_TOKEN": ADMIN, "XSTREAMS_METRICS_GROUP_STREAMS": "orders-*"},
    )
    yield srv, keys
    srv.stop()


def _bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


async def test_figures_move_as_the_test_writes_reads_and_subscribes(
    service: tuple[Server, dict[str, str]],
) -> None:
    srv, keys = service
    async with httpx.AsyncClient(base_url=srv.url, headers=_bearer(ADMIN), timeout=15) as c:

        async def cmd(*args: str) -> httpx.Response:
            return await c.post("/", json=list(args))

        async def scrape() -> Samples:
            r = await c.get("/metrics", headers=_bearer(keys["prometheus"]))
            assert r.status_code == 200, r.text
            assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
            return parse(r.text)

        assert (await cmd("FLUSHALL")).json() == {"result": "OK"}
        before = await scrape()

        # Writes and reads, on the command endpoint and REST; one error.
        for n in range(3):
            assert (await cmd("XADD", "orders-1", "*", "n", str(n))).status_code == 200
        r = await c.post("/v1/streams/orders-1/entries", json={"fields": {"n": "3"}})
        assert r.status_code == 201
        assert (await cmd("XGROUP", "CREATE", "orders-1", "g", "0")).json() == {"result": "OK"}
        r = await cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "orders-1", ">")
        assert len(r.json()["result"][0][1]) == 2
        r = await cmd("XREADGROUP", "GROUP", "nope", "c", "STREAMS", "orders-1", ">")
        assert r.json()["error"].startswith("NOGROUP")
        assert len((await cmd("XRANGE", "orders-1", "-", "+")).json()["result"]) == 4

        after = await scrape()

        def moved(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        assert moved("xstreams_commands_total", command="xadd") == 3
        assert moved("xstreams_command_duration_seconds_count", command="xadd") == 3
        assert moved("xstreams_command_duration_seconds_bucket", command="xadd", le="+Inf") == 3
        assert moved("xstreams_commands_total", command="xreadgroup") == 2
        assert moved("xstreams_commands_total", command="xrange") == 1
        assert moved("xstreams_errors_total", kind="NOGROUP") == 1
        # POST / answered 200 six times (3 XADD, XGROUP, XREADGROUP, XRANGE), 400 once.
        assert moved("xstreams_http_requests_total", method="POST", route="/", status="200") == 6
        assert moved("xstreams_http_requests_total", method="POST", route="/", status="400") == 1
        assert moved("xstreams_http_requests_total", method="POST", route=ROUTE, status="201") == 1
        latency = "xstreams_http_request_duration_seconds"
        assert moved(f"{latency}_count", method="POST", route=ROUTE) == 1
        assert moved(f"{latency}_sum", method="POST", route=ROUTE) > 0
        # The keyspace, read at scrape time.
        assert value(after, "xstreams_streams") == 1
        assert value(after, "xstreams_stream_entries") == 4
        assert moved("xstreams_stream_node_bytes") > 0
        assert value(after, "xstreams_consumer_groups") == 1
        assert value(after, "xstreams_group_pending", stream="orders-1", group="g") == 2
        assert value(after, "xstreams_group_lag", stream="orders-1", group="g") == 2
        # The journal: every write committed (fsync always), in group commits.
        assert moved("xstreams_journal_commit_duration_seconds_count") >= 1
        assert moved("xstreams_journal_commit_records_sum") >= 6  # 4 appends, XGROUP, delivery
        assert value(after, "xstreams_journal_uncommitted_records") == 0
        assert value(after, "xstreams_storage_available") == 1
        assert value(after, "process_resident_memory_bytes") > 0

        # An ack moves the group's pending count.
        ids = [e[0] for e in (await cmd("XRANGE", "orders-1", "-", "+")).json()["result"]]
        assert (await cmd("XACK", "orders-1", "g", ids[0])).json() == {"result": 1}
        assert value(await scrape(), "xstreams_group_pending", stream="orders-1", group="g") == 1

        # A blocked client shows while it waits, and goes when served.
        blocked = asyncio.create_task(cmd("XREAD", "BLOCK", "10000", "STREAMS", "orders-2", "$"))
        await scraped(scrape, lambda s: value(s, "xstreams_blocked_clients") == 1, "one blocked")
        await cmd("XADD", "orders-2", "*", "f", "v")
        assert (await blocked).json()["result"][0][0] == "orders-2"
        await scraped(scrape, lambda s: value(s, "xstreams_blocked_clients") == 0, "none blocked")

        # An event stream shows while open; a client that leaves is counted as such.
        gone = value(await scrape(), "xstreams_sse_closed_total", reason="disconnected")
        async with c.stream("GET", "/v1/streams/orders-1/events") as events:
            assert events.status_code == 200
            await events.aiter_bytes().__anext__()  # the retry hint: the stream is open
            await scraped(scrape, lambda s: value(s, "xstreams_sse_subscribers") == 1, "one open")
        await scraped(
            scrape,
            lambda s: (
                value(s, "xstreams_sse_subscribers") == 0
                and value(s, "xstreams_sse_closed_total", reason="disconnected") == gone + 1
            ),
            "the event stream closed as disconnected",
        )


async def test_only_the_admin_or_a_metrics_credential_reads_them(
    service: tuple[Server, dict[str, str]],
) -> None:
    srv, keys = service
    async with httpx.AsyncClient(base_url=srv.url, timeout=15) as c:
        assert (await c.get("/metrics")).status_code == 401
        refused = await c.get("/metrics", headers=_bearer(keys["reader"]))
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "NOPERM this user has no permissions to run the 'metrics' command"
        }
        for credential in (ADMIN, keys["prometheus"]):
            r = await c.get("/metrics", headers=_bearer(credential))
            assert r.status_code == 200
            assert value(parse(r.text), "xstreams_build_info", version=_version()) == 1
        # The metrics key reads no stream and writes nothing.
        prometheus = _bearer(keys["prometheus"])
        r = await c.get("/v1/streams/orders-1/entries", headers=prometheus)
        assert r.status_code == 403
        r = await c.post("/", json=["XADD", "s", "*", "f", "v"], headers=prometheus)
        assert r.status_code == 403


def _version() -> str:
    from app import __version__

    return __version__


async def test_group_series_are_opt_in_and_bounded() -> None:
    setup = [
        ["XGROUP", "CREATE", stream, group, "$", "MKSTREAM"]
        for stream, group in (("a1", "g1"), ("a1", "g2"), ("a2", "g3"), ("b1", "g4"))
    ]
    async with serve(metrics_group_streams=["a*"], metrics_max_groups=2) as c:
        await c.post("/pipeline", json=setup)
        s = parse((await c.get("/metrics")).text)
        shown = {
            dict(lbls)["stream"] + "/" + dict(lbls)["group"]
            for (name, lbls) in s
            if name == "xstreams_group_pending"
        }
        assert shown == {"a1/g1", "a1/g2"}  # b1 does not match; a2/g3 is past the bound
        assert value(s, "xstreams_metrics_groups_omitted") == 1
        assert value(s, "xstreams_consumer_groups") == 4
    async with serve() as c:  # the default: no per-group series at all
        await c.post("/pipeline", json=setup)
        s = parse((await c.get("/metrics")).text)
        assert not labels_of(s, "xstreams_group_pending", "group")


async def test_idmp_producers_past_the_cap_are_counted_as_evicted() -> None:
    """Three producers on a stream that may hold two: the gauges show the two held, their
    IDs, and the one forgotten, as XINFO STREAM's pids-evicted does."""
    store = Store(config=StreamConfig(idmp_max_producers=2))
    async with serve(store=store) as c:
        for producer in ("p1", "p2", "p3"):
            for iid in ("a", "b"):
                r = await c.post("/", json=["XADD", "s", "IDMP", producer, iid, "*", "f", "v"])
                assert r.status_code == 200, r.text
        s = parse((await c.get("/metrics")).text)
        info = (await c.post("/", json=["XINFO", "STREAM", "s"])).json()["result"]
    fields = dict(zip(info[::2], info[1::2], strict=True))
    assert value(s, "xstreams_idmp_producers") == fields["pids-tracked"] == 2
    assert value(s, "xstreams_idmp_iids") == fields["iids-tracked"] == 4
    assert value(s, "xstreams_idmp_producers_evicted") == fields["pids-evicted"] == 1


async def test_labels_stay_bounded_whatever_clients_send() -> None:
    async with serve() as c:
        for n in range(5):
            await c.post("/", json=[f"NOSUCH{n}", "x"])
            await c.get(f"/v1/streams/s{n}/nothing-here-{n}")
            await c.request("BREW", f"/v1/pot-{n}")
        await c.post("/", json=["XADD", "s", "*", "f", "v"])
        s = parse((await c.get("/metrics")).text)
    assert labels_of(s, "xstreams_commands_total", "command") == {"xadd"}
    assert value(s, "xstreams_errors_total", kind="ERR") == 5  # the unknown commands
    routes = labels_of(s, "xstreams_http_requests_total", "route")
    assert all("nothing-here" not in r and "pot-" not in r for r in routes), routes
    assert labels_of(s, "xstreams_http_requests_total", "method") <= {"GET", "POST", "OTHER"}


async def test_a_request_id_is_echoed_or_made() -> None:
    async with serve() as c:
        given = await c.get("/healthz", headers={"X-Request-ID": "trace-7f3a:1"})
        assert given.headers["x-request-id"] == "trace-7f3a:1"
        made = [
            (await c.get("/healthz", headers=h)).headers["x-request-id"]
            for h in ({}, {"X-Request-ID": "has space"}, {"X-Request-ID": "x" * 129})
        ]
        assert all(len(m) == 32 and int(m, 16) >= 0 for m in made)
        assert len(set(made)) == 3
