"""Webhooks over REST (issue 28), on the three targets: each route, each error, the consumer
each webhook is, and the secret, which goes in and never comes out (replies and logs)."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from app.api.services import app_services
from app.engine.delivery import MAX_WEBHOOK_BATCH
from app.engine.store import Store
from app.engine.webhook_health import HealthUpdate
from app.main import create_app
from app.settings import Settings
from tests.api.inproc import serve
from tests.api.rest.conftest import add, problem

SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="  # 16 bytes
OTHER_SECRET = "whsec_ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYQ=="
S = "/v1/streams/s"
G = S + "/groups/g"
H = G + "/webhooks"
URL = "https://hooks.example.com/orders"
NOT_RUN_HOST = "not run: host '{}' matches no --webhook-allow-host glob"
NOT_RUN_HTTP = "not run: http:// is refused: webhooks go over https (unless --webhook-allow-http)"


def group(api: httpx.Client, name: str = "g") -> None:
    add(api, "s", ("f", "v"))
    r = api.post(S + "/groups", json={"name": name, "id": "0"})
    assert r.status_code == 201, r.text


def view(name: str = "h", url: str = URL, **parts: Any) -> dict[str, Any]:
    """A webhook as the service shows it (defaults, running; no attempt yet, and not run by
    a service without --webhook-allow-host, as its error says)."""
    shown = {"name": name, "url": url, "timeout_ms": 5000, "concurrency": 8, "batch": 1,
             "paused": False, "paused_reason": None}  # fmt: skip
    out = {**shown, **health(url), **parts}
    return {**out, **state_of(out), **{k: v for k, v in parts.items() if k in STATE}}


STATE = ("state", "reason")


def state_of(shown: dict[str, Any]) -> dict[str, Any]:
    """The state a view shows: paused (its reason), refused (why the rules refuse its URL,
    the error a webhook not run shows, less its ``not run: ``), else running."""
    if shown["paused"]:
        return {"state": "paused", "reason": shown["paused_reason"]}
    error = shown["last_error"] or ""
    if error.startswith("not run: "):
        return {"state": "refused", "reason": error.removeprefix("not run: ")}
    return {"state": "running", "reason": None}


def health(url: str = URL, **parts: Any) -> dict[str, Any]:
    """The health fields of a webhook no process ran: on the default settings the error
    says why it is not run."""
    why = NOT_RUN_HTTP if url.startswith("http:") else NOT_RUN_HOST.format(httpx.URL(url).host)
    shown = {"last_status": None, "last_error": why, "last_attempt_at_ms": None,
             "last_success_at_ms": None, "consecutive_failures": 0}  # fmt: skip
    return {**shown, **parts}


def put(api: httpx.Client, name: str = "h", **body: Any) -> httpx.Response:
    return api.put(f"{H}/{name}", json={"url": URL, "secret": SECRET, **body})


def test_a_webhook_is_created_replaced_listed_and_removed(api: httpx.Client) -> None:
    group(api)
    r = put(api)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"{H}/h"
    assert r.json() == view()
    r = put(api, "h", url="http://other.example.com/", secret=OTHER_SECRET, batch=10)
    assert r.status_code == 200, r.text
    replaced = view(url="http://other.example.com/", batch=10)
    assert r.json() == replaced
    assert put(api, "a", timeout_ms=100, concurrency=1).status_code == 201
    assert api.get(f"{H}/h").json() == replaced
    assert api.get(H).json() == {"webhooks": [view("a", timeout_ms=100, concurrency=1), replaced]}
    assert api.delete(f"{H}/h").status_code == 204
    problem(api.get(f"{H}/h"), 404, "ERR")
    problem(api.delete(f"{H}/h"), 404, "ERR")  # removing it again
    problem(api.patch(f"{H}/h", json={"paused": True}), 404, "ERR")
    assert [w["name"] for w in api.get(H).json()["webhooks"]] == ["a"]


def test_each_webhook_is_a_consumer_of_its_group_at_once(api: httpx.Client) -> None:
    group(api)
    put(api, "hook-1")
    consumers = api.get(G + "/consumers").json()["consumers"]
    assert [(c["name"], c["pending"]) for c in consumers] == [("hook-1", 0)]
    # Removing the webhook leaves its consumer (and what it holds) in the group.
    api.post(G + "/consumers/hook-1/reads", json={"count": 1})
    assert api.delete(f"{H}/hook-1").status_code == 204
    consumers = api.get(G + "/consumers").json()["consumers"]
    assert [(c["name"], c["pending"]) for c in consumers] == [("hook-1", 1)]


def test_pause_and_resume(api: httpx.Client) -> None:
    group(api)
    put(api)
    r = api.patch(f"{H}/h", json={"paused": True})
    assert r.status_code == 200, r.text
    assert r.json() == view(paused=True, paused_reason="paused by request")
    assert api.patch(f"{H}/h", json={"paused": True}).json()["paused_reason"] == "paused by request"
    assert api.get(f"{H}/h").json()["paused"] is True
    r = api.patch(f"{H}/h", json={"paused": False})
    assert r.json() == view()
    assert api.get(H).json() == {"webhooks": [view()]}
    # A PUT replaces the whole webhook: one paused runs again.
    api.patch(f"{H}/h", json={"paused": True})
    assert put(api).json() == view()


def test_webhooks_go_with_their_group_and_stream(api: httpx.Client) -> None:
    group(api)
    put(api)
    assert api.delete(G).status_code == 204
    api.post(S + "/groups", json={"name": "g", "id": "0"})
    assert api.get(H).json() == {"webhooks": []}
    put(api)
    assert api.delete(S).status_code == 204
    group(api)
    assert api.get(H).json() == {"webhooks": []}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", H, None),
        ("GET", f"{H}/h", None),
        ("PUT", f"{H}/h", {"url": URL, "secret": SECRET}),
        ("PUT", f"{H}/h", {"url": "ftp://x", "secret": SECRET}),  # the path's 404 first
        ("PATCH", f"{H}/h", {"paused": True}),
        ("DELETE", f"{H}/h", None),
    ],
)
def test_a_missing_group_or_stream_is_nogroup(
    api: httpx.Client, method: str, path: str, body: Any
) -> None:
    problem(api.request(method, path, json=body), 404, "NOGROUP")
    group(api, "other")
    problem(api.request(method, path, json=body), 404, "NOGROUP")
    assert api.get(S + "/groups/other/consumers").json()["consumers"] == []


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"url": "ftp://hooks.example.com/", "secret": SECRET}, "http(s) URL"),
        ({"url": "hooks.example.com", "secret": SECRET}, "http(s) URL"),
        ({"url": URL, "secret": "not a whsec secret"}, "whsec_"),
        ({"url": URL, "secret": "whsec_c2hvcnQ="}, "16 or more bytes"),
        ({"url": URL, "secret": "whsec_!!!"}, "16 or more bytes"),
        ({"url": URL, "secret": SECRET, "timeout_ms": 0}, "timeout_ms"),
        ({"url": URL, "secret": SECRET, "concurrency": 100_000}, "concurrency"),
        ({"url": URL, "secret": SECRET, "batch": MAX_WEBHOOK_BATCH + 1}, "batch"),
    ],
)
def test_a_bad_webhook_is_a_400_with_the_rules_text(
    api: httpx.Client, body: dict[str, Any], words: str
) -> None:
    group(api)
    body_ = problem(api.put(f"{H}/h", json=body), 400, "ERR")
    assert words in body_["error"]
    assert api.get(H).json() == {"webhooks": []}
    assert api.get(G + "/consumers").json()["consumers"] == []  # nothing was made


@pytest.mark.parametrize(
    "body",
    [
        {"secret": SECRET},
        {"url": URL},
        {"url": URL, "secret": SECRET, "batch": "1"},
        {"url": URL, "secret": SECRET, "paused": True},
        {"url": URL, "secret": 12345678},
    ],
)
def test_a_malformed_webhook_is_a_422(api: httpx.Client, body: Any) -> None:
    group(api)
    problem(api.put(f"{H}/h", json=body), 422)


@pytest.mark.parametrize("body", [{}, {"paused": "yes"}, {"paused": True, "url": URL}])
def test_a_malformed_pause_is_a_422(api: httpx.Client, body: Any) -> None:
    group(api)
    put(api)
    problem(api.patch(f"{H}/h", json=body), 422)


def test_the_secret_is_never_shown(api: httpx.Client) -> None:
    group(api)
    replies = [
        put(api),
        put(api),
        api.get(H),
        api.get(f"{H}/h"),
        api.patch(f"{H}/h", json={"paused": True}),
        api.put(f"{H}/h", json={"url": URL, "secret": SECRET, "batch": 0}),  # 400
        api.put(f"{H}/h", json={"url": URL, "secret": SECRET, "nope": 1}),  # 422
        api.get(G),
        api.get(G + "/consumers"),
    ]
    for r in replies:
        assert SECRET.removeprefix("whsec_") not in r.text, (r.request.method, r.text)


async def test_the_secret_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve(Store()) as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        body = {"url": URL, "secret": SECRET}
        assert (await client.put(f"{H}/h", json=body)).status_code == 201
        assert (await client.put(f"{H}/h", json={**body, "batch": 0})).status_code == 400
        assert (await client.put(f"{H}/h", json={**body, "nope": 1})).status_code == 422
        assert (await client.get(H)).status_code == 200
    logged = [r.getMessage() for r in caplog.records if r.name == "xstreams.access"]
    assert sum("PUT /v1/streams/s/groups/g/webhooks/h" in m for m in logged) == 3
    for record in caplog.records:
        assert SECRET.removeprefix("whsec_") not in record.getMessage()


async def test_a_group_with_its_most_consumers_refuses_a_new_webhook() -> None:
    async with serve(Store(), max_group_consumers=1) as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        await client.post("/", json=["XGROUP", "CREATECONSUMER", "s", "g", "alice"])
        r = await client.put(f"{H}/h", json={"url": URL, "secret": SECRET})
        problem(r, 409)
        assert (await client.get(H)).json() == {"webhooks": []}
        # A webhook named after a consumer that is there takes that consumer.
        r = await client.put(f"{H}/alice", json={"url": URL, "secret": SECRET})
        assert r.status_code == 201, r.text


# --- the destination, checked when set (issue 37) --------------------------------------------
LOOPBACK = "(unless --webhook-allow-private)"


@pytest.mark.parametrize(
    ("settings", "url", "words"),
    [
        # Every host allowed, http too, but not private addresses: loopback is refused.
        ({"webhook_allow_http": True}, "http://127.0.0.1:9/hook", "127.0.0.1 is a loopback"),
        ({"webhook_allow_http": True}, "http://[::1]:9/hook", "::1 is a loopback"),
        ({"webhook_allow_http": True}, "http://10.1.2.3/hook", "10.1.2.3 is a private"),
        # A name is resolved, as each request does: localhost is loopback.
        ({"webhook_allow_http": True}, "http://localhost:9/hook", "127.0.0.1 is a loopback"),
        ({}, "https://localhost/hook", "127.0.0.1 is a loopback"),
        ({}, "http://127.0.0.1:9/hook", "(unless --webhook-allow-http)"),
        ({"webhook_allow_hosts": ["*.example.com"]}, "https://127.0.0.1/", "--webhook-allow-host"),
        ({"webhook_allow_private": True}, "https://169.254.169.254/", "cloud metadata address"),
        ({}, "https://no-such-host.invalid/hook", "cannot resolve 'no-such-host.invalid'"),
    ],
)
async def test_a_destination_the_rules_refuse_is_a_422_naming_the_rule(
    settings: dict[str, Any], url: str, words: str
) -> None:
    allow = {"webhook_allow_hosts": ["*"], **settings}
    async with serve(Store(), **allow) as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        r = await client.put(f"{H}/h", json={"url": url, "secret": SECRET})
        body = problem(r, 422, "ERR")
        assert body["detail"].startswith("ERR webhook destination refused: ")
        assert words in body["detail"]
        if "loopback" in words or "private" in words:
            assert LOOPBACK in body["detail"]  # the setting that would allow it
        assert (await client.get(H)).json() == {"webhooks": []}  # nothing was written
        assert (await client.get(G + "/consumers")).json()["consumers"] == []
        assert (await client.get(G + "/policy")).status_code == 404


async def test_a_destination_the_rules_allow_is_set() -> None:
    allow = {"webhook_allow_hosts": ["*"], "webhook_allow_http": True}
    async with serve(Store(), **allow, webhook_allow_private=True) as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        for url in ("http://127.0.0.1:9/hook", "http://localhost:9/hook"):
            r = await client.put(f"{H}/h", json={"url": url, "secret": SECRET})
            assert r.status_code in (200, 201), r.text
            no_attempt = {**health(url), "last_error": None}
            assert r.json() == view(url=url, **no_attempt)


async def test_a_refused_destination_on_a_missing_group_is_its_404() -> None:
    async with serve(Store(), webhook_allow_hosts=["*"]) as client:
        r = await client.put(f"{H}/h", json={"url": "https://127.0.0.1/", "secret": SECRET})
        problem(r, 404, "NOGROUP")


async def test_the_health_the_loops_stored_is_shown() -> None:
    """What the delivery loops stored (``Backend.record_webhook_health``) is in GET, the
    list and PATCH; a webhook replaced with another URL starts with none."""
    allow = {"webhook_allow_hosts": ["*"], "webhook_allow_private": True}
    app = create_app(Settings(**allow), store=Store())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        await client.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        url = "https://127.0.0.1/hook"
        assert (await client.put(f"{H}/h", json={"url": url, "secret": SECRET})).is_success
        backend = app_services(app).backend
        (hook,) = await backend.webhooks("s", "g")
        await backend.record_webhook_health(hook, HealthUpdate(False, 2, 502, "answers 502", 7))
        await backend.record_webhook_health(hook, HealthUpdate(False, 1, None, "timeout", 9))
        shown = view(url=url, **health(url, last_error="timeout", last_attempt_at_ms=9,
                                      consecutive_failures=3))  # fmt: skip
        assert (await client.get(f"{H}/h")).json() == shown
        assert (await client.get(H)).json() == {"webhooks": [shown]}
        r = await client.patch(f"{H}/h", json={"paused": True})
        assert r.json() == {**shown, "paused": True, "paused_reason": "paused by request",
                            "state": "paused", "reason": "paused by request"}  # fmt: skip
        await backend.record_webhook_health(hook, HealthUpdate(True, 0, 204, None, 11, 11))
        r = await client.patch(f"{H}/h", json={"paused": False})
        assert r.json() == view(
            url=url,
            **health(
                url, last_error=None, last_status=204, last_attempt_at_ms=11, last_success_at_ms=11
            ),
        )
        other = "https://127.0.0.2/hook"
        r = await client.put(f"{H}/h", json={"url": other, "secret": SECRET})
        assert r.json() == view(url=other, **health(other, last_error=None))
