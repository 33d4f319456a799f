"""In front of Redis, the backend's trouble is 503 with ``Retry-After`` on every surface, and
/readyz says which shards are degraded (issue 23, part 8).

Each fault is a real redis-server in that state (tests/support/redis_servers.py): a cluster
node serving no slots (CLUSTERDOWN), a replica (READONLY), a server loading its dataset
(LOADING), a port where nothing listens any more, a cluster master whose slots were taken
away, a master short of the replicas ``--wait-replicas`` asks for. Only a client's own
mistake is a 4xx.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as redis_sync

from tests.support.redis_cluster import redis_cluster
from tests.support.redis_servers import (
    cli,
    need_binaries,
    server_or_skip,
)
from tests.support.targets import Frontend
from tests.support.waiting import until

pytestmark = pytest.mark.redis

PROBLEM = "application/problem+json"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    """``served(url, *flags)``: a front-end in front of ``url``, stopped after the test."""
    fronts: list[tuple[Frontend, httpx.Client]] = []

    def serve(url: str, *extra: str) -> httpx.Client:
        front = Frontend(tmp_path / str(len(fronts)), "--backend", url, *extra)
        fronts.append((front, httpx.Client(base_url=front.url, timeout=20)))
        return fronts[-1][1]

    yield serve
    for front, client in fronts:
        client.close()
        front.stop()


def assert_unavailable(r: httpx.Response, text: str, rest: bool = False) -> None:
    """503, ``Retry-After``, and the error in the surface's own shape."""
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["retry-after"] == "1"
    body = r.json()
    if rest:
        assert r.headers["content-type"].startswith(PROBLEM)
        assert body["status"] == 503 and body["error"].startswith(text), body
        assert body["code"] == text.split(" ", 1)[0]
    else:
        assert r.headers["content-type"].startswith("application/json")
        assert list(body) == ["error"] and body["error"].startswith(text), body


def every_surface(api: httpx.Client, key: str, text: str) -> None:
    """A write and a read on each surface: command, path style, pipeline, transaction,
    REST."""
    assert_unavailable(api.post("/", json=["XADD", key, "*", "f", "v"]), text)
    assert_unavailable(api.post("/", json=["XRANGE", key, "-", "+"]), text)
    assert_unavailable(api.get(f"/xlen/{key}"), text)
    assert_unavailable(api.post("/pipeline", json=[["XADD", key, "*", "f", "v"]]), text)
    assert_unavailable(api.post("/multi-exec", json=[["XADD", key, "*", "f", "v"]]), text)
    entry = {"fields": {"f": "v"}}
    assert_unavailable(api.post(f"/v1/streams/{key}/entries", json=entry), text, rest=True)
    assert_unavailable(api.get(f"/v1/streams/{key}/entries"), text, rest=True)


def test_a_node_serving_no_slots_answers_503_on_every_surface(served: Any) -> None:
    """A cluster node with no slots answers CLUSTERDOWN to every keyed command, as every
    master does while its cluster is down: 503, never the client's 400."""
    with server_or_skip("--cluster-enabled", "yes", "--cluster-config-file", "n.conf") as node:
        api = served(f"redis://{node.address}/0")
        every_surface(api, "s", "CLUSTERDOWN Hash slot not served")
        # the client's own mistake stays its own
        r = api.post("/", json=["XADD", "s"])
        assert r.status_code == 400 and "retry-after" not in r.headers
        ready = api.get("/readyz")
        assert ready.status_code == 200  # it answers PING; the shard is named
        assert ready.json()["degraded"] == [
            {
                "node": node.address,
                "replicas": 0,
                "reason": "cluster_state:fail: commands answer CLUSTERDOWN",
            }
        ]


def test_a_replica_answers_writes_503_and_serves_reads(served: Any) -> None:
    """Pointed at a replica (a master demoted by a failover): writes answer READONLY as
    503, reads are served."""
    with server_or_skip() as gone:
        dead_master = gone.port
    with server_or_skip("--replicaof", "127.0.0.1", str(dead_master)) as replica:
        api = served(f"redis://{replica.address}/0")
        r = api.post("/", json=["XADD", "s", "*", "f", "v"])
        assert_unavailable(r, "READONLY You can't write against a read only replica.")
        r = api.post("/v1/streams/s/entries", json={"fields": {"f": "v"}})
        assert_unavailable(r, "READONLY", rest=True)
        assert api.post("/", json=["XLEN", "s"]).json() == {"result": 0}
        degraded = api.get("/readyz").json()["degraded"]
        assert [d["reason"] for d in degraded] == ["a replica now: writes answer READONLY"]


def test_a_loading_redis_answers_503(served: Any) -> None:
    """A Redis restarted under a front-end answers LOADING while it reads its dataset."""
    with server_or_skip("--dbfilename", "dump.rdb") as server:
        api = served(f"redis://{server.address}/0")
        client = redis_sync.Redis(port=server.port)
        with client.pipeline(transaction=False) as pipe:
            for i in range(2000):
                pipe.set(f"k{i}", "x" * 100)
            pipe.execute()
        client.save()
        client.close()
        server.stop()
        # 2000 keys at 5 ms each: about 10 s of LOADING, with events served every 1 KB
        server.start(
            "--dbfilename", "dump.rdb", "--key-load-delay", "5000",
            "--loading-process-events-interval-bytes", "1024",
            answers=False,
        )  # fmt: skip
        until(lambda: cli(server.port, "PING").startswith("LOADING"), 30, what="LOADING")
        text = "ERR the Redis backend is unavailable: Redis is loading the dataset in memory"
        r = api.post("/", json=["XADD", "s", "*", "f", "v"])
        for _ in range(2):  # the first may find its pooled connection closed by the restart
            if "loading" in r.text:
                break
            r = api.post("/", json=["XADD", "s", "*", "f", "v"])
        assert_unavailable(r, text)
        assert_unavailable(api.get("/v1/streams/s"), text, rest=True)


def test_redis_gone_answers_503_with_retry_after(served: Any) -> None:
    with server_or_skip() as server:
        api = served(f"redis://{server.address}/0")
        assert api.post("/", json=["XADD", "s", "*", "f", "v"]).status_code == 200
    # stopped: nothing listens on its port any more
    text = "ERR the Redis backend is unavailable"
    assert_unavailable(api.post("/", json=["XADD", "s", "*", "f", "v"]), text)
    assert_unavailable(api.post("/pipeline", json=[["XLEN", "s"]]), text)
    assert_unavailable(api.get("/v1/streams/s"), text, rest=True)
    assert api.get("/readyz").status_code == 503


def _wait_replicas_readiness(api: httpx.Client) -> list[dict[str, Any]]:
    r = api.get("/readyz")
    assert r.status_code == 200, r.text  # degraded shards leave the front-end in rotation
    degraded: list[dict[str, Any]] = r.json()["degraded"]
    return degraded


def test_readyz_names_a_master_short_of_wait_replicas(served: Any) -> None:
    """With --wait-replicas 1 and no replica every write answers 503 after the timeout:
    /readyz says so, and stops saying so once a replica is online."""
    with server_or_skip("--repl-diskless-sync-delay", "0") as master:
        # a timeout a loaded machine's replica meets once online (the first write waits it out)
        wait = ("--wait-replicas", "1", "--wait-timeout", "2000")
        api = served(f"redis://{master.address}/0", *wait)
        assert _wait_replicas_readiness(api) == [
            {
                "node": master.address,
                "replicas": 0,
                "reason": "0 of 1 replicas online (--wait-replicas 1):"
                " writes answer 503 after --wait-timeout",
            }
        ]
        assert_unavailable(api.post("/", json=["XADD", "s", "*", "f", "v"]), "NOREPLICAS")
        with server_or_skip("--replicaof", "127.0.0.1", str(master.port)):
            until(lambda: _wait_replicas_readiness(api) == [], 30, what="a replica online")
            r = api.post("/", json=["XADD", "s", "*", "f", "v"])
            assert r.status_code == 200, r.text


@pytest.mark.slow
def test_a_cluster_master_without_its_slots_fails_only_its_streams(served: Any) -> None:
    """One master of a throwaway cluster loses its slots (its cluster state turns to fail,
    as during a failover): its streams answer 503 CLUSTERDOWN, the other masters' streams
    are served, and /readyz (still 200) names that master."""
    need_binaries()
    with redis_cluster() as nodes:
        port = int(nodes[0].split(":")[1])
        table = cli(port, "CLUSTER", "NODES").splitlines()
        first, last = next(line for line in table if "myself" in line).split()[8].split("-")
        api = served("redis+cluster://" + ",".join(nodes))
        keys = {}  # a key on each master
        for i in range(200):
            slot = int(cli(port, "CLUSTER", "KEYSLOT", f"k{i}"))
            owner = nodes[0] if int(first) <= slot <= int(last) else "other"
            keys.setdefault(owner, []).append(f"k{i}")
        assert cli(port, "CLUSTER", "DELSLOTSRANGE", first, last) == "OK"
        until(
            lambda: "cluster_state:fail" in cli(port, "CLUSTER", "INFO"), 30, "cluster_state:fail"
        )
        every_surface(api, keys[nodes[0]][0], "CLUSTERDOWN")
        for key in keys["other"][:5]:  # streams on healthy masters are served
            assert api.post("/", json=["XADD", key, "*", "f", "v"]).status_code == 200
            r = api.post(f"/v1/streams/{key}/entries", json={"fields": {"f": "v"}})
            assert r.status_code == 201, r.text
        r = api.get("/readyz")
        assert r.status_code == 200
        body = r.json()
        assert body["shards"] == 3
        assert [d["node"] for d in body["degraded"]] == [nodes[0]]
        assert "CLUSTERDOWN" in body["degraded"][0]["reason"]


@pytest.mark.slow
def test_readyz_names_every_cluster_master_short_of_wait_replicas(
    served: Any, cluster_nodes: list[str]
) -> None:
    api = served("redis+cluster://" + ",".join(cluster_nodes), "--wait-replicas", "1")
    body = api.get("/readyz").json()
    assert body["shards"] == 3
    assert sorted(d["node"] for d in body["degraded"]) == sorted(cluster_nodes)
    assert {d["replicas"] for d in body["degraded"]} == {0}


def test_readyz_reports_no_degraded_shard_when_all_is_well(served: Any) -> None:
    with server_or_skip() as server:
        api = served(f"redis://{server.address}/0")
        r = api.get("/readyz")
        assert r.status_code == 200
        assert r.json()["shards"] == 1 and r.json()["degraded"] == []
