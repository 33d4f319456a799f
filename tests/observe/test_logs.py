"""``--log-format json``: one JSON object a line, one access line per request with its route,
status, duration and request ID; credentials never reach the output."""

from __future__ import annotations

import functools
import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.observe.logs import REQUEST_ID, JsonFormatter, RequestIdFilter
from tests.conftest import Server
from tests.support.waiting import until

TOKEN = "t0ken-Never-Logged"
COOKIE = "c00kie-Never-Logged"


@pytest.fixture
def json_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Path]]:
    out = tmp_path / "server.log"
    with out.open("wb") as sink:
        popen = functools.partial(subprocess.Popen, stdout=sink, stderr=subprocess.STDOUT)
        monkeypatch.setattr(subprocess, "Popen", popen)
        srv = Server(
            tmp_path / "data",
            "--log-level",
            "info",
            "--log-format",
            "json",
            env={"XSTREAMS_TOKEN": TOKEN},
        )
        monkeypatch.undo()
        try:
            yield srv, out
        finally:
            srv.stop()


def _lines(out: Path, count: int) -> list[dict[str, Any]]:
    """Every line of the output as JSON, once ``count`` access lines are there."""

    def enough() -> list[dict[str, Any]] | None:
        lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        return (
            lines
            if sum(1 for d in lines if d.get("path", "").startswith("/v1/")) >= count
            else None
        )

    return until(enough, 10, f"{count} access lines in {out}")


def test_one_json_line_per_request_with_its_id_and_no_secret(
    json_server: tuple[Server, Path],
) -> None:
    srv, out = json_server
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=srv.url, timeout=10) as client:
        r = client.post(
            "/v1/streams/s/entries",
            json={"fields": {"f": "v"}},
            headers={**auth, "X-Request-ID": "req-42", "Cookie": f"xstreams_token={COOKIE}"},
        )
        assert r.status_code == 201 and r.headers["x-request-id"] == "req-42"
        r = client.get("/v1/streams/s/entries", params={"_token": TOKEN})
        assert r.status_code == 200
        made = r.headers["x-request-id"]
        r = client.get("/v1/streams/s/entries", headers={"Cookie": f"xstreams_token={COOKIE}"})
        assert r.status_code == 401
    lines = _lines(out, 3)
    text = out.read_text()
    assert TOKEN not in text and COOKIE not in text
    # (the probes the test's Server made while it started are there too)
    access = [d for d in lines if d["logger"] == "xstreams.access" and d["route"] != "/healthz"]
    assert [(d["method"], d["route"], d["status"]) for d in access] == [
        ("POST", "/v1/streams/{stream}/entries", 201),
        ("GET", "/v1/streams/{stream}/entries", 200),
        ("GET", "unrouted", 401),  # refused by the access gate, before routing
    ]
    assert [d["request_id"] for d in access[:2]] == ["req-42", made]
    assert access[1]["path"] == "/v1/streams/s/entries?_token=***"
    for d in access:
        assert d["level"] == "info" and isinstance(d["duration_ms"], float)
        assert d["duration_ms"] >= 0 and d["time"].endswith("+00:00")
    # uvicorn's own lines are JSON too (every line parsed above), and its access log is off.
    assert any(d["logger"].startswith("uvicorn") for d in lines)
    assert not any(d["logger"] == "uvicorn.access" for d in lines)


def test_a_line_logged_while_serving_carries_the_request_id() -> None:
    record = logging.LogRecord("xstreams", logging.WARNING, "f.py", 1, "x?_token=%s", ("s",), None)
    token = REQUEST_ID.set("req-9")
    try:
        RequestIdFilter().filter(record)
    finally:
        REQUEST_ID.reset(token)
    doc = json.loads(JsonFormatter().format(record))
    assert doc["request_id"] == "req-9"
    assert doc["message"] == "x?_token=***"  # the formatter masks what a filter missed
