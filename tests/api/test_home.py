"""A browser's ``GET /`` is sent to the dashboard (app/api/home.py); a client's ``GET /`` and
every ``POST /`` keep the command endpoint's answers (the Upstash protocol)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.api.home import prefers_html
from tests.conftest import Server

# What Firefox and Chrome send for a page they navigate to.
FIREFOX = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
CHROME = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server that asks every request for its token."""
    srv = Server(Path(tmp_path_factory.mktemp("home")), "--token", "t")
    try:
        yield srv.url
    finally:
        srv.stop()


@pytest.mark.parametrize("accept", [FIREFOX, CHROME])
def test_a_browser_is_sent_to_the_dashboard_without_a_token(locked: str, accept: str) -> None:
    r = httpx.get(locked + "/", headers={"Accept": accept})
    assert r.status_code == 307 and r.headers["location"] == "/ui/"
    assert "accept" in r.headers["vary"].lower()
    page = httpx.get(locked + "/", headers={"Accept": accept}, follow_redirects=True)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def test_clients_keep_the_command_endpoint_answers(locked: str) -> None:
    auth = {"Authorization": "Bearer t"}
    for accept in ("*/*", "application/json", None):
        headers = {**auth, **({"Accept": accept} if accept else {})}
        r = httpx.get(locked + "/", headers=headers)
        assert (r.status_code, r.json()) == (400, {"error": "ERR empty command"}), accept
    assert httpx.get(locked + "/", headers={"Accept": "*/*"}).status_code == 401
    posted = httpx.post(locked + "/", json=["PING"], headers={**auth, "Accept": FIREFOX})
    assert posted.json() == {"result": "PONG"}  # a browser's POST runs the command
    other = httpx.get(locked + "/ping", headers={**auth, "Accept": FIREFOX})
    assert other.json() == {"result": "PONG"}  # only / itself is redirected


@pytest.mark.parametrize(
    ("accept", "page"),
    [
        (FIREFOX, True),
        ("text/html", True),
        ("application/xhtml+xml", True),
        ("*/*", False),
        ("", False),
        ("application/json, text/html", False),
        ("application/json;q=0.5, text/html", True),
        ("text/html;q=0", False),
        ("text/html;q=oops, */*", False),
    ],
)
def test_what_counts_as_a_browser(accept: str, page: bool) -> None:
    assert prefers_html(accept) is page
