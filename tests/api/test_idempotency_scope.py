"""Idempotency-Key is scoped per credential, on the three targets: one tenant's key neither
replays nor probes another's (the stored name holds the credential's identity)."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from tests.support.targets import TARGET_PARAMS, Served, served_on

SECRET = "an application secret of enough length"


def bearer(sub: str) -> dict[str, str]:
    grant = {"write": ["*"], "read": ["*"]}
    claims = {"sub": sub, "exp": int(time.time()) + 600, "xstreams": grant}
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def test_one_credentials_key_is_not_anothers(served: Served) -> None:
    alice, bob = bearer("alice"), bearer("bob")
    admin = {"Authorization": "Bearer admin"}
    key = {"Idempotency-Key": "same-key"}
    cmd = ["XADD", "s", "*", "n", "1"]
    async with served(token="admin", jwt_secret=SECRET) as c:
        await c.post("/", json=["DEL", "s"], headers=admin)
        a = await c.post("/", json=cmd, headers={**alice, **key})
        b = await c.post("/", json=cmd, headers={**bob, **key})
        assert a.status_code == b.status_code == 200, (a.text, b.text)
        assert "idempotent-replayed" not in b.headers  # bob's ran: alice's was not replayed
        assert a.json() != b.json()
        # Bob's other request under the key meets his own first one (422), never alice's.
        other = await c.post("/", json=["XADD", "s", "*", "n", "2"], headers={**bob, **key})
        assert other.status_code == 422
        again = await c.post("/", json=cmd, headers={**alice, **key})
        assert again.headers["idempotent-replayed"] == "true" and again.json() == a.json()
        length = await c.post("/", json=["XLEN", "s"], headers=admin)
        assert length.json() == {"result": 2}
