"""CORS never pairs a wildcard with credentials: ``--cors-origin '*'`` is served as ``*``
without ``Access-Control-Allow-Credentials``, no Origin is ever echoed unless it is named, and
``*`` beside named origins is refused at start with one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from app.settings import Settings
from tests.api.inproc import serve

EVIL = "http://evil.test"
PREFLIGHT = {
    "Origin": EVIL,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type",
}


async def test_a_wildcard_is_served_without_credentials() -> None:
    async with serve(token="t", cors_origins=["*"]) as client:
        pre = await client.options("/v1/streams/s/entries", headers=PREFLIGHT)
        assert pre.status_code == 200
        assert pre.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in pre.headers
        # A request with a cookie and one without: never the origin echoed, never credentials.
        for extra in ({}, {"Cookie": "xstreams_token=t"}):
            r = await client.get("/v1/streams", headers={"Origin": EVIL, **extra})
            assert r.headers["access-control-allow-origin"] == "*", extra
            assert "access-control-allow-credentials" not in r.headers
        # A page anywhere may still call with a bearer header (not a CORS credential).
        r = await client.post(
            "/", json=["PING"], headers={"Origin": EVIL, "Authorization": "Bearer t"}
        )
        assert r.json() == {"result": "PONG"}
        assert r.headers["access-control-allow-origin"] == "*"


async def test_only_named_origins_are_echoed() -> None:
    page = "https://app.example.com"
    async with serve(token="t", cors_origins=[page]) as client:
        r = await client.get("/v1/streams", headers={"Origin": page, "Authorization": "Bearer t"})
        assert r.headers["access-control-allow-origin"] == page
        assert r.headers["access-control-allow-credentials"] == "true"
        r = await client.get("/v1/streams", headers={"Origin": EVIL, "Authorization": "Bearer t"})
        assert "access-control-allow-origin" not in r.headers
        pre = await client.options("/v1/streams/s/entries", headers=PREFLIGHT)
        assert "access-control-allow-origin" not in pre.headers


def test_a_wildcard_beside_named_origins_is_refused_at_start() -> None:
    with pytest.raises(ValidationError, match="'\\*' allows every origin"):
        Settings(cors_origins=["*", "https://app.example.com"])
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--cors-origin", "*",
         "--cors-origin", "https://app.example.com"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: cors_origins: ") and "'*' allows every origin" in line
