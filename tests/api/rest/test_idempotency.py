"""Idempotency-Key on every surface, on the three targets: a retried write runs once and gets
the first response byte for byte; the same key with another request is 422; bad keys are
400; a blocking read under a key is refused; reads (GET) ignore the header."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.api.rest.conftest import problem
from tests.conftest import Commands

E = "/v1/streams/s/entries"


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def entries(api: httpx.Client, stream: str = "s") -> list[dict[str, Any]]:
    r = api.get(f"/v1/streams/{stream}/entries")
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["entries"]
    return found


def same_response(first: httpx.Response, again: httpx.Response) -> None:
    assert again.status_code == first.status_code
    assert again.content == first.content
    for name in ("content-type", "location"):
        assert again.headers.get(name) == first.headers.get(name)
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"


def test_a_retried_command_runs_once_and_gets_the_first_reply(api: httpx.Client) -> None:
    h = key()
    first = api.post("/", json=["XADD", "s", "*", "n", "1"], headers=h)
    assert first.status_code == 200, first.text
    again = api.post("/", json=["XADD", "s", "*", "n", "1"], headers=h)
    same_response(first, again)
    assert [e["id"] for e in entries(api)] == [first.json()["result"]]
    # Without the key the same request runs again: the key is what makes it once.
    assert api.post("/", json=["XADD", "s", "*", "n", "1"]).status_code == 200
    assert len(entries(api)) == 2


def test_a_retried_rest_append_keeps_its_status_location_and_body(api: httpx.Client) -> None:
    h = key()
    body = {"fields": {"n": "1"}}
    first = api.post(E, json=body, headers=h)
    assert first.status_code == 201, first.text
    assert first.headers["location"].endswith(first.json()["ids"][0])
    again = api.post(E, json=body, headers=h)
    same_response(first, again)
    batch = {"entries": [{"fields": {"n": str(i)}} for i in range(3)]}
    hb = key()
    first = api.post(E, json=batch, headers=hb)
    assert first.status_code == 201, first.text
    same_response(first, api.post(E, json=batch, headers=hb))
    assert len(entries(api)) == 4


def test_a_client_error_is_kept_too(api: httpx.Client) -> None:
    """A 4xx is an answer: the retry gets it again, even once the state would allow it."""
    h = key()
    first = api.post("/v1/streams/s/groups/g/acks", json={"ids": ["1-0"]}, headers=h)
    problem(first, 404)
    api.post(E, json={"id": "1-0", "fields": {"n": "1"}})
    assert api.post("/v1/streams/s/groups", json={"name": "g", "id": "0"}).status_code == 201
    again = api.post("/v1/streams/s/groups/g/acks", json={"ids": ["1-0"]}, headers=h)
    same_response(first, again)


def test_pipeline_and_transaction_replay_every_reply(api: httpx.Client) -> None:
    cmds = [["XADD", "s", "*", "n", "1"], ["XLEN", "s"], ["XGROUP", "CREATE", "s", "g", "0"]]
    for path in ("/pipeline", "/multi-exec"):
        api.post("/", json=["DEL", "s"])
        h = key()
        first = api.post(path, json=cmds, headers=h)
        assert first.status_code == 200, first.text
        assert first.json()[1] == {"result": 1}
        again = api.post(path, json=cmds, headers=h)
        same_response(first, again)
        assert len(entries(api)) == 1


def test_the_consume_transform_produce_step_runs_once(api: httpx.Client) -> None:
    """The README's recipe: outputs and the input's XACK in one /multi-exec under a key
    derived from the input entry, sent twice (a retry after a lost answer). The two streams
    share a hash tag: on Redis Cluster a transaction stays in one slot."""
    src, out = "{job}in", "{job}out"
    api.post("/", json=["XADD", src, "1-0", "n", "1"])
    api.post("/", json=["XGROUP", "CREATE", src, "g", "0"])
    read = api.post("/", json=["XREADGROUP", "GROUP", "g", "w", "STREAMS", src, ">"])
    assert read.json()["result"][0][1][0][0] == "1-0"
    step = [
        ["XADD", out, "*", "from", "1-0", "part", "a"],
        ["XADD", out, "*", "from", "1-0", "part", "b"],
        ["XACK", src, "g", "1-0"],
    ]
    h = {"Idempotency-Key": "ctp:g:in:1-0"}
    first = api.post("/multi-exec", json=step, headers=h)
    assert first.json()[2] == {"result": 1}, first.text
    same_response(first, api.post("/multi-exec", json=step, headers=h))
    assert api.post("/", json=["XLEN", out]).json() == {"result": 2}
    assert api.post("/", json=["XPENDING", src, "g"]).json()["result"][0] == 0


def test_the_same_key_with_another_request_is_422(api: httpx.Client, xs: Commands) -> None:
    h = key()
    assert api.post("/", json=["XADD", "s", "*", "n", "1"], headers=h).status_code == 200
    for method, path, body in (
        ("POST", "/", ["XADD", "s", "*", "n", "2"]),  # another body
        ("POST", "/v1/streams/s/entries", {"fields": {"n": "1"}}),  # another path
    ):
        r = api.request(method, path, json=body, headers=h)
        assert r.status_code == 422, r.text
        assert "used for a different request" in r.text
    problem(api.post(E, json={"fields": {"n": "2"}}, headers=h), 422)
    assert len(entries(api)) == 1


def test_keys_are_1_to_255_printable_characters(api: httpx.Client) -> None:
    for bad in ("", "x" * 256, "tab\there", "é"):
        r = api.post(
            "/", json=["XADD", "s", "*", "n", "1"], headers={"Idempotency-Key": bad.encode()}
        )
        assert r.status_code == 400, (bad, r.text)
        assert r.json() == {
            "error": "ERR Idempotency-Key must be 1 to 255 printable ASCII characters"
        }
    problem(api.post(E, json={"fields": {"n": "1"}}, headers={"Idempotency-Key": ""}), 400)
    assert entries(api) == []
    # The draft's structured-field string, quoted, names the same key as without quotes.
    first = api.post("/", json=["XADD", "s", "*", "n", "1"], headers={"Idempotency-Key": '"q1"'})
    again = api.post("/", json=["XADD", "s", "*", "n", "1"], headers={"Idempotency-Key": "q1"})
    same_response(first, again)
    longest = {"Idempotency-Key": "k" * 255}
    assert api.post("/", json=["XADD", "s", "*", "n", "1"], headers=longest).status_code == 200


def test_a_blocking_read_under_a_key_is_refused(api: httpx.Client) -> None:
    api.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
    text = (
        "ERR a blocking read cannot run under an Idempotency-Key: its answer depends on when"
        " it is served. Send it without BLOCK (block_ms) or without the key"
    )
    for cmd in (
        ["XREAD", "BLOCK", "10", "STREAMS", "s", "$"],
        ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "s", ">"],
    ):
        r = api.post("/", json=cmd, headers=key())
        assert (r.status_code, r.json()) == (400, {"error": text})
    r = api.post("/pipeline", json=[["XREAD", "BLOCK", "10", "STREAMS", "s", "$"]], headers=key())
    assert (r.status_code, r.json()) == (400, {"error": text})
    read = "/v1/streams/s/groups/g/consumers/c/reads"
    body = problem(api.post(read, json={"id": ">", "block_ms": 10}, headers=key()), 400)
    assert body["error"] == text  # Redis's style, as the command endpoint's
    # Nothing ran: the consumer a blocking XREADGROUP creates does not exist.
    assert api.get("/v1/streams/s/groups/g/consumers").json()["consumers"] == []
    # The same reads without BLOCK run under a key.
    r = api.post(read, json={"id": ">"}, headers=key())
    assert r.status_code == 200, r.text


def test_a_group_read_under_a_key_hands_the_same_entries_to_its_retry(api: httpx.Client) -> None:
    for i in range(1, 4):
        api.post("/", json=["XADD", "s", f"{i}-0", "n", str(i)])
    api.post("/", json=["XGROUP", "CREATE", "s", "g", "0"])
    h = key()
    read = "/v1/streams/s/groups/g/consumers/c/reads"
    first = api.post(read, json={"id": ">", "count": 2}, headers=h)
    assert [e["id"] for e in first.json()["entries"]] == ["1-0", "2-0"]
    same_response(first, api.post(read, json={"id": ">", "count": 2}, headers=h))
    # The retry delivered nothing more: 3-0 is still the group's next.
    r = api.post(read, json={"id": ">"})
    assert [e["id"] for e in r.json()["entries"]] == ["3-0"]


def test_reads_and_unkeyed_writes_ignore_the_header(api: httpx.Client) -> None:
    api.post("/", json=["XADD", "s", "1-0", "n", "1"])
    h = key()
    first = api.get(E, headers=h)
    api.post("/", json=["XADD", "s", "2-0", "n", "2"])
    again = api.get(E, headers=h)
    assert "idempotent-replayed" not in again.headers
    assert len(again.json()["entries"]) == len(first.json()["entries"]) + 1


def test_metrics_count_the_outcomes(api: httpx.Client) -> None:
    def count(outcome: str) -> float:
        for line in api.get("/metrics").text.splitlines():
            if line.startswith(f'xstreams_idempotent_requests_total{{outcome="{outcome}"}}'):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    kept, replayed, reused = count("kept"), count("replayed"), count("reused")
    h = key()
    api.post("/", json=["XADD", "s", "*", "n", "1"], headers=h)
    api.post("/", json=["XADD", "s", "*", "n", "1"], headers=h)
    api.post("/", json=["XADD", "s", "*", "n", "2"], headers=h)
    assert (count("kept"), count("replayed"), count("reused")) == (
        kept + 1,
        replayed + 1,
        reused + 1,
    )
