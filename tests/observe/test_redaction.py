"""Credentials passed in a query string (``_token``, ``access_token``) never reach a log line.

The rule is checked on strings (a table), on records as uvicorn and our own code log them (the
access log's positional arguments, messages, tracebacks), and on a real server's output.
"""

from __future__ import annotations

import functools
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from uvicorn.logging import AccessFormatter

from app.redaction import RedactSecrets, redact
from tests.conftest import Server
from tests.support.waiting import until

SECRET = "s3cret-Value"

CASES = [
    ("/v1/streams/s/events?_token=abc", "/v1/streams/s/events?_token=***"),
    ("/v1/read?stream=a&_token=abc&after=0", "/v1/read?stream=a&_token=***&after=0"),
    ("/v1/events?access_token=eyJ.x.y", "/v1/events?access_token=***"),
    ("/?%5Ftoken=abc", "/?%5Ftoken=***"),  # the name as the server decodes it
    ('"GET /x?a=1&_token=abc HTTP/1.1" 200', '"GET /x?a=1&_token=*** HTTP/1.1" 200'),
    ("http://h/x?_token=abc#frag", "http://h/x?_token=***#frag"),
    ("/x?_token=", "/x?_token=***"),
    ("/x?_token=a&_token=b", "/x?_token=***&_token=***"),
    # In any case: a client that wrote the name in capitals still sent its secret.
    ("/x?_TOKEN=abc", "/x?_TOKEN=***"),
    ("/v1/events?Access_Token=eyJ.x.y&a=1", "/v1/events?Access_Token=***&a=1"),
    ("/?%5FToKeN=abc", "/?%5FToKeN=***"),
    # Not secrets, or not in a query: left alone.
    ("/x?token=abc&my_token=abc&_tokens=abc", "/x?token=abc&my_token=abc&_tokens=abc"),
    ("_token=abc in a sentence", "_token=abc in a sentence"),
    ("no query at all", "no query at all"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.fixture
def redacted(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[pytest.LogCaptureFixture]:
    """caplog's handler with the filter ``xstreams serve`` puts on every handler. An in-thread
    uvicorn an earlier test ran applied uvicorn's logging config, which stops
    ``uvicorn.access`` from propagating to caplog's root handler: let it through again."""
    access = logging.getLogger("uvicorn.access")
    monkeypatch.setattr(access, "propagate", True)
    monkeypatch.setattr(access, "disabled", False)  # a logging config run before may disable it
    monkeypatch.setattr(access, "level", logging.NOTSET)
    secrets = RedactSecrets()
    caplog.handler.addFilter(secrets)
    caplog.set_level(logging.INFO)
    yield caplog
    caplog.handler.removeFilter(secrets)


def test_the_access_log_line_is_redacted_and_keeps_its_shape(
    redacted: pytest.LogCaptureFixture,
) -> None:
    path = f"/v1/streams/s/events?after=0&_token={SECRET}"
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", path, "1.1", 200
    )
    # Only this line's record: a server an earlier test started may log its own meanwhile.
    (record,) = [
        r for r in redacted.records if r.name == "uvicorn.access" and "_token=" in str(r.args)
    ]
    assert SECRET not in redacted.text
    assert "_token=***" in redacted.text
    # uvicorn's access formatter unpacks the arguments by position: they must still fit.
    line = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s').format(record)
    assert line == '127.0.0.1:5000 - "GET /v1/streams/s/events?after=0&_token=*** HTTP/1.1" 200 OK'


def test_messages_arguments_and_tracebacks_are_redacted(
    redacted: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("xstreams")
    url = httpx.URL(f"http://h/v1/x?access_token={SECRET}")
    log.warning(f"fetching /x?_token={SECRET}")
    log.warning("fetching %s (%d)", url, 3)
    log.warning(url)  # not a string: printed as str(url)
    try:
        raise ValueError(f"bad request /v1/x?_token={SECRET}")
    except ValueError:
        log.exception("failed")
    assert SECRET not in redacted.text
    assert "fetching /x?_token=***" in redacted.text
    assert "fetching http://h/v1/x?access_token=*** (3)" in redacted.text
    assert " http://h/v1/x?access_token=***\n" in redacted.text
    assert "ValueError: bad request /v1/x?_token=***" in redacted.text


@pytest.fixture
def logged_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Path]]:
    """A server at log level info (so with an access log), its output kept in a file."""
    out = tmp_path / "server.log"
    with out.open("wb") as sink:
        # The shared Server helper inherits the test's stdout; here it goes to the file.
        popen = functools.partial(subprocess.Popen, stdout=sink, stderr=subprocess.STDOUT)
        monkeypatch.setattr(subprocess, "Popen", popen)
        srv = Server(tmp_path / "data", "--log-level", "info", env={"XSTREAMS_TOKEN": SECRET})
        monkeypatch.undo()
        try:
            yield srv, out
        finally:
            srv.stop()


def test_a_real_servers_output_holds_no_secret(logged_server: tuple[Server, Path]) -> None:
    srv, out = logged_server
    with httpx.Client(base_url=srv.url, timeout=10) as client:
        ok = client.get("/v1/streams/s/entries", params={"after": "$", "_token": SECRET})
        assert ok.status_code == 200
        refused = client.get("/v1/streams/s/entries", params={"access_token": SECRET + "x"})
        assert refused.status_code == 401
    until(lambda: out.read_text().count("/v1/streams/s/entries") >= 2, 5, "two access lines")
    text = out.read_text()
    assert SECRET not in text
    assert "_token=***" in text
    assert "access_token=***" in text
