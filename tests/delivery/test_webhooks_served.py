"""Webhooks through the whole service: set over REST on a running ``xstreams serve``, entries
POSTed to a real receiver on loopback, and a kill -9 of the service while requests are in
flight loses nothing.

The receiver holds its answers (a closed gate) so the service dies with entries taken by
the webhook's consumer and not yet acknowledged. After the restart (the journal replayed)
those entries are still pending for the webhook, which sends them again once they are idle
past its timeout: every entry ends acknowledged, and every one reached the receiver with a
signature ``standardwebhooks`` verifies and one ``webhook-id`` however often it was sent.
"""

from __future__ import annotations

import base64
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
import standardwebhooks

from tests.conftest import Commands
from tests.delivery.support import Hit, receiving
from tests.storage.conftest import DurableServer
from tests.support.waiting import until

SECRET = "whsec_" + base64.b64encode(b"served webhook secret!").decode()
ENTRIES = 12
ALLOW = ("--webhook-allow-host", "127.0.0.1", "--webhook-allow-http", "--webhook-allow-private")


def serve(tmp_path: Path) -> tuple[DurableServer, Commands]:
    srv = DurableServer(tmp_path, database(tmp_path), *ALLOW)
    return srv, Commands(srv.url)


def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'xstreams.db'}"


def delivered(hits: list[Hit]) -> dict[str, set[str]]:
    """Entry ID -> the webhook-ids it was sent under, each signature verified."""
    out: dict[str, set[str]] = defaultdict(set)
    for hit in hits:
        body: Any = standardwebhooks.Webhook(SECRET).verify(hit.body, hit.headers)
        out[body["id"]].add(hit.headers["webhook-id"])
    return out


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_webhook_set_over_rest_survives_kill_9_mid_delivery(tmp_path: Path) -> None:
    gate = threading.Event()
    with receiving() as receiver:
        receiver.gate = gate  # requests wait: the service dies with them in flight
        srv, xs = serve(tmp_path)
        try:
            assert xs("XGROUP", "CREATE", "orders", "g", "$", "MKSTREAM") == "OK"
            hook = {"url": receiver.url, "secret": SECRET, "timeout_ms": 1000, "concurrency": 4}
            r = xs.client.put("/v1/streams/orders/groups/g/webhooks/h", json=hook)
            assert r.status_code == 201, r.text
            assert "secret" not in r.text
            ids = [xs("XADD", "orders", "*", "n", str(i)) for i in range(ENTRIES)]
            until(lambda: receiver.active == 4, 20, "four requests in flight")
            pending = xs("XPENDING", "orders", "g")
            assert pending[0] >= 4 and pending[3] == [["h", str(pending[0])]]
        finally:
            xs.client.close()
            srv.kill()
        gate.set()  # the receiver answers 200 from now on, to requests nobody waits for
        srv, xs = serve(tmp_path)
        try:

            def all_acknowledged() -> bool:
                summary = xs("XPENDING", "orders", "g")
                done = delivered(receiver.hits)
                return summary[0] == 0 and set(done) == set(ids)

            until(all_acknowledged, 60, "every entry delivered and acknowledged")
        finally:
            xs.client.close()
            srv.stop()
    sent = delivered(receiver.hits)
    assert set(sent) == set(ids)
    assert all(len(webhook_ids) == 1 for webhook_ids in sent.values())  # stable per entry
    assert len(receiver.hits) > ENTRIES  # what was in flight at the kill went again


def test_the_served_webhook_runs_only_where_allowed(tmp_path: Path) -> None:
    """A service without the loopback allowed does not run a webhook pointing there: the
    entries stay unread (no XNACK churn, no dead letters), then flow once it is allowed."""
    with receiving() as receiver:
        srv = DurableServer(tmp_path, database(tmp_path))
        xs = Commands(srv.url)
        try:
            assert xs("XGROUP", "CREATE", "orders", "g", "$", "MKSTREAM") == "OK"
            hook = {"url": receiver.url, "secret": SECRET}
            assert xs.client.put("/v1/streams/orders/groups/g/webhooks/h", json=hook).is_success
            xs("XADD", "orders", "*", "n", "1")
            r = httpx.get(srv.url + "/metrics")
            assert r.status_code == 200
            assert xs("XPENDING", "orders", "g")[0] == 0
            assert receiver.hits == []
        finally:
            xs.client.close()
            srv.stop()
        srv, xs = serve(tmp_path)
        try:
            until(lambda: len(receiver.hits) == 1, 20, "delivered once allowed")
            until(lambda: xs("XPENDING", "orders", "g")[0] == 0, 20, "acknowledged")
        finally:
            xs.client.close()
            srv.stop()


def test_a_loopback_webhook_without_allow_private_is_refused_when_set(tmp_path: Path) -> None:
    """The issue's case: every host and http allowed, private addresses not. The PUT is a
    422 naming the setting, and nothing is stored."""
    srv = DurableServer(
        tmp_path, database(tmp_path), "--webhook-allow-host", "*", "--webhook-allow-http"
    )
    xs = Commands(srv.url)
    try:
        assert xs("XGROUP", "CREATE", "orders", "g", "$", "MKSTREAM") == "OK"
        hook = {"url": "http://127.0.0.1:9/hook", "secret": SECRET}
        r = xs.client.put("/v1/streams/orders/groups/g/webhooks/h", json=hook)
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == (
            "ERR webhook destination refused: 127.0.0.1 is a loopback address"
            " (unless --webhook-allow-private)"
        )
        assert xs.client.get("/v1/streams/orders/groups/g/webhooks").json() == {"webhooks": []}
    finally:
        xs.client.close()
        srv.stop()
