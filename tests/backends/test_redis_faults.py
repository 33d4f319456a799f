"""Redis's trouble is the backend's, not the request's (issue 23, part 8): the classes of
Redis's error replies, the status each gets on both surfaces, and each master's health as
/readyz reports it. The surfaces themselves: tests/scale/test_faults.py."""

from __future__ import annotations

import pytest

from app.access import NoPerm
from app.api.errors import command_status, retry_headers, status_of
from app.backends.errors import (
    BackendUnavailable,
    BlockPoolExhausted,
    RedisFault,
    RedisUnavailable,
    ReplicasUnavailable,
    fault_of,
)
from app.backends.redis import RedisBackend
from app.backends.redis.parse import redis_error
from app.backends.shards import ShardHealth, assess, readiness_fields
from app.engine.errors import (
    BusyGroup,
    CommandError,
    NoGroup,
    NoSuchKey,
    SyntaxError_,
    WrongArgument,
    WrongType,
)
from tests.conftest import free_port
from tests.support.redis_servers import server_or_skip

# Redis's own texts for a passing state of the server (redis-server 7.0.15, server.c,
# cluster.c, replication.c, script.c, as it sends them).
FAULTS = [
    "CLUSTERDOWN Hash slot not served",
    "CLUSTERDOWN The cluster is down",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    "LOADING Redis is loading the dataset in memory",
    "READONLY You can't write against a read only replica.",
    "READONLY You can't write against a read only replica. script: fb0e5e9f6f4a, on"
    " @user_script:1.",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist"
    " to disk.",
    "OOM command not allowed when used memory > 'maxmemory'.",
    "NOREPLICAS Not enough good replicas to write.",
]

# A client's own mistakes (and what it names that is not there) keep their classes.
MISTAKES: list[tuple[str, type[CommandError]]] = [
    ("ERR syntax error", SyntaxError_),
    ("ERR Invalid stream ID specified as stream command argument", WrongArgument),
    ("BUSYGROUP Consumer Group name already exists", BusyGroup),
    ("NOGROUP No such key 's' or consumer group 'g'", NoGroup),
    ("WRONGTYPE Operation against a key holding the wrong kind of value", WrongType),
    ("ERR no such key", NoSuchKey),
    ("CROSSSLOT Keys in request don't hash to the same slot", CommandError),
]


@pytest.mark.parametrize("text", FAULTS)
def test_a_passing_state_of_redis_is_a_fault_answered_503(text: str) -> None:
    error = redis_error(text)
    assert type(error) is RedisFault and error.text == text
    assert status_of(error) == 503  # REST
    assert command_status(error) == 503  # the command endpoint
    assert retry_headers(503) == {"Retry-After": "1"}


@pytest.mark.parametrize(("text", "cls"), MISTAKES)
def test_a_client_mistake_is_not_a_fault(text: str, cls: type[CommandError]) -> None:
    assert fault_of(text) is None
    error = redis_error(text)
    assert type(error) is cls
    assert 400 <= status_of(error) < 500
    assert command_status(error) == 400  # the Upstash protocol's one status for errors


def test_the_backend_errors_are_one_class_of_503() -> None:
    for error in (
        BlockPoolExhausted(4),
        ReplicasUnavailable(0, 1),
        RedisUnavailable("connection refused"),
        RedisFault("LOADING Redis is loading the dataset in memory"),
    ):
        assert isinstance(error, BackendUnavailable)
        assert (status_of(error), command_status(error)) == (503, 503)
    assert command_status(NoPerm("NOPERM this user has no permissions")) == 403
    assert retry_headers(400) is None


# --- each master's health -----------------------------------------------------------------
MASTER_0 = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n"
MASTER_2 = (
    "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"
    "slave0:ip=10.0.0.2,port=7001,state=online,offset=42,lag=0\r\n"
    "slave1:ip=10.0.0.3,port=7002,state=wait_bgsave,offset=0,lag=0\r\n"
)
REPLICA = "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_link_status:up\r\n"
CLUSTER_OK = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"
CLUSTER_FAIL = "cluster_state:fail\r\ncluster_slots_assigned:5461\r\n"


@pytest.mark.parametrize(
    ("replication", "cluster", "wanted", "replicas", "degraded"),
    [
        (MASTER_0, None, 0, 0, None),
        (MASTER_0, CLUSTER_OK, 0, 0, None),
        (
            MASTER_0,
            None,
            1,
            0,
            "0 of 1 replicas online (--wait-replicas 1): writes answer 503 after --wait-timeout",
        ),
        # one replica still syncing does not acknowledge a WAIT
        (MASTER_2, CLUSTER_OK, 1, 1, None),
        (
            MASTER_2,
            CLUSTER_OK,
            2,
            1,
            "1 of 2 replicas online (--wait-replicas 2): writes answer 503 after --wait-timeout",
        ),
        (MASTER_2, CLUSTER_FAIL, 1, 1, "cluster_state:fail: commands answer CLUSTERDOWN"),
        (REPLICA, None, 0, 0, "a replica now: writes answer READONLY"),
    ],
)
def test_a_master_s_health(
    replication: str, cluster: str | None, wanted: int, replicas: int, degraded: str | None
) -> None:
    assert assess("10.0.0.1:7000", replication, cluster, wanted) == ShardHealth(
        "10.0.0.1:7000", replicas, degraded
    )


def test_readiness_lists_only_degraded_shards() -> None:
    shards = [ShardHealth("a:1", 1, None), ShardHealth("b:2", None, "unreachable: refused")]
    assert readiness_fields(shards) == {
        "shards": 2,
        "degraded": [{"node": "b:2", "replicas": None, "reason": "unreachable: refused"}],
    }


# --- against real servers -----------------------------------------------------------------
@pytest.mark.redis
async def test_a_port_where_nothing_listens_is_unavailable_and_unreachable() -> None:
    port = free_port()
    backend = RedisBackend.from_url(f"redis://127.0.0.1:{port}/0")
    try:
        with pytest.raises(RedisUnavailable):
            await backend.command(["XADD", "s", "*", "f", "v"])
        with pytest.raises(RedisUnavailable):
            await backend.pipeline([["XLEN", "s"]])
        [shard] = await backend.shards(2.0)
        assert shard.node == f"127.0.0.1:{port}" and shard.replicas is None
        assert shard.degraded is not None and shard.degraded.startswith("unreachable: ")
    finally:
        await backend.close()


@pytest.mark.redis
async def test_a_replica_cut_from_its_master_answers_masterdown() -> None:
    with server_or_skip() as gone:
        dead_master = gone.port
    stale = ("--replicaof", "127.0.0.1", str(dead_master), "--replica-serve-stale-data", "no")
    with server_or_skip(*stale) as replica:
        backend = RedisBackend.from_url(f"redis://{replica.address}/0")
        try:
            for call in (
                backend.command(["XLEN", "s"]),
                backend.pipeline([["XLEN", "s"], ["XLEN", "t"]]),
                backend.multi_exec([["XLEN", "s"]]),
            ):
                with pytest.raises(RedisFault) as e:
                    await call
                assert e.value.code == "MASTERDOWN"
        finally:
            await backend.close()


@pytest.mark.redis
async def test_a_transaction_refused_as_queued_answers_the_fault_not_execabort() -> None:
    """A cluster node serving no slots refuses each queued command (CLUSTERDOWN) and then
    EXEC (EXECABORT): the transaction's answer is the fault."""
    with server_or_skip("--cluster-enabled", "yes", "--cluster-config-file", "n.conf") as node:
        backend = RedisBackend.from_url(f"redis://{node.address}/0")
        try:
            with pytest.raises(RedisFault) as e:
                await backend.multi_exec([["XADD", "s", "*", "f", "v"], ["XLEN", "s"]])
            assert e.value.text == "CLUSTERDOWN Hash slot not served"
            with pytest.raises(RedisFault):  # one fault fails the whole pipeline
                await backend.pipeline([["PING"], ["XADD", "s", "*", "f", "v"]])
        finally:
            await backend.close()
