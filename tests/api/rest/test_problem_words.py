"""Errors a person can act on (issue 39): every /v1 problem names what it is about (the
stream, group, consumer, entry or parameter) in ``detail`` and in members of their own, while
``error`` and ``code`` keep Redis's text byte for byte; a JSON body sent as another media type
is a 415 naming both; the command endpoint answers the same mistakes exactly as before."""

from __future__ import annotations

import httpx
import pytest

from app.api.services import app_services
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.api.rest.conftest import add, problem
from tests.support.targets import Target

BODY = b'{"fields": {"a": "1"}}'


def test_a_missing_stream_is_named(api: httpx.Client) -> None:
    p = problem(api.get("/v1/streams/orders"), 404)
    assert p["detail"] == "stream 'orders' does not exist"
    assert p["stream"] == "orders"
    assert (p["error"], p["code"]) == ("ERR no such key", "ERR")  # Redis's, byte for byte


def test_a_missing_group_names_the_group_and_the_stream(api: httpx.Client) -> None:
    add(api, "orders", ("a", "1"))
    p = problem(api.get("/v1/streams/orders/groups/billing/pending"), 404, "NOGROUP")
    assert p["detail"] == "group 'billing' does not exist on stream 'orders'"
    assert (p["stream"], p["group"]) == ("orders", "billing")
    assert p["error"] == "NOGROUP No such key 'orders' or consumer group 'billing'"


def test_a_missing_consumer_and_entry_are_named(api: httpx.Client) -> None:
    add(api, "orders", ("a", "1"))
    assert api.post("/v1/streams/orders/groups", json={"name": "billing"}).status_code == 201
    p = problem(api.delete("/v1/streams/orders/groups/billing/consumers/alice"), 404)
    assert p["detail"] == "consumer 'alice' does not exist in group 'billing' of stream 'orders'"
    assert p["consumer"] == "alice"
    p = problem(api.get("/v1/streams/orders/entries/12-0"), 404)
    assert (p["detail"], p["entry"]) == ("entry '12-0' does not exist in stream 'orders'", "12-0")
    p = problem(api.get("/v1/streams/orders/entries/12-x"), 400)
    assert p["detail"] == "entry ID '12-x' is not valid: expected <ms>-<seq>"
    assert p["error"] == "ERR Invalid stream ID specified as stream command argument"


def test_a_bad_query_parameter_is_named_with_an_errors_list(api: httpx.Client) -> None:
    p = problem(api.get("/v1/streams/orders/entries", params={"count": "abc"}), 400)
    assert p["parameter"] == "count"
    assert p["detail"].startswith("parameter 'count' must be a valid integer")
    assert p["detail"].endswith("got 'abc'")
    (item,) = p["errors"]
    assert (item["parameter"], item["in"]) == ("count", "query")
    assert item["message"].startswith("must be a valid integer")
    assert p["error"].startswith("ERR invalid request: query.count: ")  # as before


def test_a_bad_body_member_is_named_by_its_path(api: httpx.Client) -> None:
    p = problem(api.post("/v1/streams/orders/entries", json={"fields": {"qty": 1}}), 422)
    assert p["parameter"] == "fields.qty"
    assert p["detail"].startswith("parameter 'fields.qty' must be a valid string, got 1")
    assert {"parameter": "fields.qty", "in": "body"}.items() <= p["errors"][0].items()
    p = problem(api.post("/v1/streams/orders/entries", json={"entries": [{"fields": {}}, 1]}), 422)
    assert {e["parameter"] for e in p["errors"]} >= {"entries[1]"}
    p = problem(api.post("/v1/streams/orders/groups", json={"nam": "g"}), 422)
    assert {(e["parameter"], e["message"]) for e in p["errors"]} == {
        ("name", "is required"), ("nam", "is not a known member")
    }  # fmt: skip


@pytest.mark.parametrize(
    ("headers", "received"),
    [
        ({}, None),
        ({"content-type": "text/plain"}, "text/plain"),
        (
            {"content-type": "application/x-www-form-urlencoded"},
            "application/x-www-form-urlencoded",
        ),  # what curl -d sends
    ],
)
def test_a_json_body_of_another_or_no_media_type_is_415(
    api: httpx.Client, headers: dict[str, str], received: str | None
) -> None:
    r = api.post("/v1/streams/orders/entries", content=BODY, headers=headers)
    p = problem(r, 415)
    assert p["expected"] == "application/json" and p.get("received") == received
    assert "application/json" in p["detail"]
    assert (repr(received) if received else "no Content-Type") in p["detail"]
    assert api.get("/v1/streams/orders").status_code == 404  # nothing appended


def test_json_and_plus_json_bodies_are_taken(api: httpx.Client) -> None:
    for media in ("application/json", "application/json; charset=utf-8", "application/x+json"):
        r = api.post("/v1/streams/orders/entries", content=BODY, headers={"content-type": media})
        assert r.status_code == 201, (media, r.text)


def test_the_openapi_document_says_415() -> None:
    doc = create_app(Settings(), store=Store()).openapi()
    op = doc["paths"]["/v1/streams/{stream}/entries"]["post"]
    assert "415" in op["responses"]
    assert (
        "get" not in doc["paths"]["/v1/streams/{stream}/entries"]
        or "415" not in (doc["paths"]["/v1/streams/{stream}/entries"]["get"]["responses"])
    )


def test_the_command_endpoint_answers_the_same_mistakes_as_before(api: httpx.Client) -> None:
    for headers in ({}, {"content-type": "text/plain"}, {"content-type": "application/json"}):
        r = api.post("/", content=b'["XINFO", "STREAM", "orders"]', headers=headers)
        assert (r.status_code, r.json()) == (400, {"error": "ERR no such key"})
        assert r.headers["content-type"] == "application/json"
        r = api.post("/", content=b'["XADD", "orders", "12-x", "a", "1"]', headers=headers)
        assert r.json() == {"error": "ERR Invalid stream ID specified as stream command argument"}
    r = api.post("/", content=b'["XPENDING", "orders", "billing"]')
    assert r.json() == {"error": "NOGROUP No such key 'orders' or consumer group 'billing'"}


def test_a_dead_letter_stream_in_another_slot_names_the_rule(
    api: httpx.Client, target: Target
) -> None:
    """Redis Cluster only: the backend moves a dead letter in one script, so both streams
    must share a hash slot; elsewhere any stream does."""
    add(api, "orders", ("a", "1"))
    assert api.post("/v1/streams/orders/groups", json={"name": "g"}).status_code == 201
    body = {"max_deliveries": 2, "dead_letter_stream": "dead"}
    r = api.put("/v1/streams/orders/groups/g/policy", json=body)
    if target.name != "cluster":
        assert r.status_code == 200, r.text
        return
    p = problem(r, 400)
    assert "same hash slot" in p["detail"] and "use a hash tag" in p["detail"]
    assert (p["stream"], p["group"], p["parameter"]) == ("orders", "g", "dead_letter_stream")
    assert p["error"].startswith("ERR dead_letter_stream must be in the same hash slot")


async def test_a_webhook_the_rules_now_refuse_shows_it_and_is_not_run() -> None:
    """Allowed when set, then the service restarts with a narrower --webhook-allow-host:
    GET shows ``refused`` and why, and the runner starts no loop for it."""
    store = Store()
    wide = Settings(webhook_allow_hosts=["127.0.0.1"], webhook_allow_private=True)
    app = create_app(wide, store=store)
    url = "https://127.0.0.1/hook"
    hook = "/v1/streams/s/groups/g/webhooks/h"
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="
        r = await client.put(hook, json={"url": url, "secret": secret})
        assert r.is_success, r.text
        assert (r.json()["state"], r.json()["reason"]) == ("running", None)
    narrow = create_app(Settings(webhook_allow_hosts=["hooks.example.com"]), store=store)
    transport = httpx.ASGITransport(app=narrow)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        shown = (await client.get(hook)).json()
        assert shown["state"] == "refused"
        assert shown["reason"] == "host '127.0.0.1' matches no --webhook-allow-host glob"
        listed = (await client.get("/v1/streams/s/groups/g/webhooks")).json()["webhooks"]
        assert listed[0]["state"] == "refused"
    runner = app_services(narrow).webhooks
    await runner.refresh()
    assert runner.running == {}  # not run: nothing read, failed or dead-lettered for a setting
