"""Access to redrive beyond the stream in the path: a redrive writes to every stream it
appends to, so it needs ``write`` on ``to``, or on the origin of every entry it would move
(read from the dead letters before the move), and a refusal moves nothing. The operations'
own verbs on their path are in the matrix (test_matrix.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.access import Grant
from app.engine.delivery import DeadLetter, dead_letter_fields
from app.engine.ids import StreamID
from tests.access.test_matrix import NO_KEY, fresh_app, key, snapshot


def dead_letter(origin: str) -> list[str]:
    """The fields of an entry of ``origin`` that a policy dead-lettered."""
    why = DeadLetter(origin, StreamID(1, 1), "g", "c", 3, "max_deliveries")
    return list(dead_letter_fields(("f", "v"), why))


async def redrive(grant: Grant, body: dict[str, Any]) -> tuple[httpx.Response, bool]:
    """POST /v1/streams/orders:dead/redrive as a key holding ``grant``, with dead letters
    from orders (5-5) and payments (6-6) there and a plain entry (7-7); the response, and
    whether the state changed."""
    app, store = fresh_app()
    store.execute(["XADD", "orders:dead", "5-5", *dead_letter("orders")])
    store.execute(["XADD", "orders:dead", "6-6", *dead_letter("payments")])
    store.execute(["XADD", "orders:dead", "7-7", "plain", "entry"])
    record, text = key(grant)
    app.state.services.access.keys.replace([record])
    before = snapshot(store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        r = await client.post(
            "/v1/streams/orders:dead/redrive",
            json=body,
            headers={"Authorization": f"Bearer {text}"},
        )
    return r, snapshot(store) != before


ORDERS = Grant.of(write=["orders*"])
BOTH = Grant.of(write=["orders*", "payments"])


@pytest.mark.parametrize(
    ("grant", "body", "served"),
    [
        # To the origins: every origin named by the entries moved must be writable.
        (ORDERS, {}, False),
        (BOTH, {}, True),
        (ORDERS, {"ids": ["5-5"]}, True),
        (ORDERS, {"ids": ["5-5", "6-6"]}, False),
        (ORDERS, {"ids": ["5-5", "7-7"]}, True),  # a plain entry names no origin: skipped
        (ORDERS, {"count": 1}, True),  # the oldest one only: from orders
        (ORDERS, {"count": 2}, False),
        # To another stream: that stream, whatever the origins.
        (ORDERS, {"to": "orders:retry"}, True),
        (ORDERS, {"to": "payments"}, False),
        (BOTH, {"ids": ["6-6"], "to": "payments"}, True),
        # Write on the dead-letter stream itself (the path) comes first.
        (Grant.of(write=["payments"]), {"ids": ["6-6"]}, False),
    ],
)
async def test_a_redrive_needs_write_on_every_stream_it_appends_to(
    grant: Grant, body: dict[str, Any], served: bool
) -> None:
    r, changed = await redrive(grant, body)
    if served:
        assert r.status_code == 200, r.text
        assert changed == bool(r.json()["moved"])
        return
    assert r.status_code == 403, r.text
    assert r.json()["error"] == NO_KEY
    assert not changed  # a refused redrive moves nothing


async def test_a_redrive_with_write_elsewhere_only_is_refused_as_a_command() -> None:
    r, changed = await redrive(Grant.of(read=["*"], consume=["*"]), {})
    assert r.status_code == 403 and r.json()["code"] == "NOPERM"
    assert "'xredrive' command" in r.json()["error"]
    assert not changed
