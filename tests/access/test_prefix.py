"""The tenant prefix mapping (app/access/prefix.py) as a table of cases, grants relative to a
prefix, and API keys bound to one by ``xstreams keys create --prefix`` on a running service."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.access import Grant, GrantError, Verb
from app.access.prefix import NotForPrefix, TenantPrefix
from app.engine.commands import lookup
from app.engine.replies import ScanPage, StreamRead
from tests.conftest import Server
from tests.support.access import FAST_KEYS, create_key, keys
from tests.support.waiting import until

T = TenantPrefix("t:")

MAPPED = [
    (["XADD", "s", "*", "f", "v"], ["XADD", "t:s", "*", "f", "v"]),
    (["XRANGE", "s", "-", "+"], ["XRANGE", "t:s", "-", "+"]),
    (["XLEN", "s"], ["XLEN", "t:s"]),
    (["DEL", "a", "b"], ["DEL", "t:a", "t:b"]),
    (["EXISTS", "a", "b", "c"], ["EXISTS", "t:a", "t:b", "t:c"]),
    (["TYPE", "s"], ["TYPE", "t:s"]),
    (["XGROUP", "CREATE", "s", "g", "$"], ["XGROUP", "CREATE", "t:s", "g", "$"]),
    (["XINFO", "STREAM", "s"], ["XINFO", "STREAM", "t:s"]),
    (["XACK", "s", "g", "1-0"], ["XACK", "t:s", "g", "1-0"]),
    (["XPENDING", "s", "g"], ["XPENDING", "t:s", "g"]),
    (
        ["XREAD", "COUNT", "2", "STREAMS", "streams", "b", "0", "0"],
        ["XREAD", "COUNT", "2", "STREAMS", "t:streams", "t:b", "0", "0"],
    ),
    (
        ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "5", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "5", "STREAMS", "t:s", ">"],
    ),
    (["PING"], ["PING"]),
    (["SCAN", "0"], ["SCAN", "0", "MATCH", "t:*"]),
    (["SCAN", "0", "MATCH", "o*", "COUNT", "9"], ["SCAN", "0", "MATCH", "t:o*", "COUNT", "9"]),
    (["SCAN", "0", "MATCH", "x", "MATCH", "*"], ["SCAN", "0", "MATCH", "t:x", "MATCH", "t:*"]),
    (["XADD", "", "*", "f", "v"], ["XADD", "t:", "*", "f", "v"]),
]


@pytest.mark.parametrize(("argv", "mapped"), MAPPED)
def test_each_key_position_gets_the_prefix(argv: list[str], mapped: list[str]) -> None:
    assert T.argv(lookup(argv), argv) == mapped


@pytest.mark.parametrize("argv", [["KEYS", "*"], ["DBSIZE"], ["FLUSHALL"], ["INFO"]])
def test_a_command_over_the_whole_keyspace_is_refused(argv: list[str]) -> None:
    with pytest.raises(NotForPrefix, match="not allowed for a credential with a key prefix"):
        T.argv(lookup(argv), argv)


def test_a_glob_character_in_the_prefix_is_escaped() -> None:
    odd = TenantPrefix("t[1]*:")
    assert odd.argv(lookup(["SCAN", "0"]), ["SCAN", "0"])[-1] == "t\\[1\\]\\*:*"
    grant = Grant.of(read=["o*"]).within("t[1]*:")
    assert grant.allows(Verb.READ, "t[1]*:orders")
    assert not grant.allows(Verb.READ, "t1x:orders") and not grant.allows(Verb.READ, "orders")
    assert odd.unglob(grant.read[0]) == "o*"


def test_replies_name_the_tenants_streams_only() -> None:
    scan = lookup(["SCAN", "0"])
    assert T.reply(scan, ScanPage(7, ["t:a", "u:b", "t:"])) == ScanPage(7, ["a", ""])
    assert T.reply(scan, [b"7", ["t:a", "x"]]) == [b"7", ["a"]]
    xread = lookup(["XREAD", "STREAMS", "s", "0"])
    assert T.reply(xread, [StreamRead("t:s", [])]) == [StreamRead("s", [])]
    assert T.reply(xread, [["t:s", []]]) == [["s", []]]
    assert T.error("NOGROUP No such key 't:s' or consumer group 'g'") == (
        "NOGROUP No such key 's' or consumer group 'g'"
    )


def test_admin_has_no_meaning_inside_a_prefix() -> None:
    with pytest.raises(GrantError):
        Grant(admin=True).within("t:")
    assert Grant(admin=True).within("") == Grant(admin=True)


def test_keys_bound_to_prefixes_live_apart_on_a_running_service(tmp_path: Path) -> None:
    refused = keys(tmp_path, "create", "--name", "bad", "--admin", "--prefix", "a:")
    assert refused.returncode == 2 and "--prefix" in refused.stderr
    grant = ("--write", "*", "--read", "*")
    a = {"Authorization": f"Bearer {create_key(tmp_path, 'a', *grant, '--prefix', 'a:')}"}
    b = {"Authorization": f"Bearer {create_key(tmp_path, 'b', *grant, '--prefix', 'b:')}"}
    listed = keys(tmp_path, "list")
    assert "prefix=a:" in listed.stdout and "prefix=b:" in listed.stdout, listed.stdout
    srv = Server(tmp_path, "--token", "admin", env=FAST_KEYS)
    try:
        until(lambda: httpx.get(srv.url + "/v1/whoami", headers=b).status_code == 200)
        for who, n in ((a, "1"), (b, "2")):
            r = httpx.post(srv.url + "/", json=["XADD", "orders", "*", "n", n], headers=who)
            assert r.status_code == 200, r.text
        for who, n in ((a, "1"), (b, "2")):
            entries = httpx.get(srv.url + "/v1/streams/orders/entries", headers=who).json()
            assert [e["fields"] for e in entries["entries"]] == [{"n": n}]
            assert httpx.get(srv.url + "/v1/whoami", headers=who).json()["prefix"] in (
                "a:",
                "b:",
            )
        admin = {"Authorization": "Bearer admin"}
        scan = httpx.post(srv.url + "/", json=["SCAN", "0"], headers=admin).json()
        assert sorted(scan["result"][1]) == ["a:orders", "b:orders"]
    finally:
        srv.stop()


def test_an_event_streams_error_names_the_key_as_the_tenant_does() -> None:
    from app.api.sse.wire import error_event
    from app.engine.errors import CommandError

    error = CommandError("NOGROUP No such key 't:s' or consumer group 'g' in XREADGROUP")
    assert b"No such key 's'" in error_event(error, T)
    assert b"No such key 't:s'" in error_event(error)
