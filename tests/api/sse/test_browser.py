"""A real browser's EventSource: headless Chromium (Debian's) driven by Playwright.

The page is served by the test itself (Playwright answers its URL), on the xstreams origin so
EventSource needs no CORS. The server ends every stream after a short lifetime; the browser
reconnects on its own with ``Last-Event-ID``, and must end with exactly the entries appended,
in order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.sse.conftest import SSE_ENV
from tests.conftest import REQUIRE_SERVICES, Server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LIFETIME_MS = 700

PAGE = """<!doctype html>
<meta charset="utf-8">
<script>
  const seen = {entries: [], opens: 0, errors: 0};
  const source = new EventSource("/v1/streams/orders/events?last_id=0");
  source.onopen = () => seen.opens++;
  source.onerror = () => seen.errors++;
  source.addEventListener("entry", (e) => {
    const entry = JSON.parse(e.data);
    seen.entries.push({eventId: e.lastEventId, id: entry.id, item: entry.fields.item});
  });
  window.seen = seen;
</script>
"""


@pytest.fixture(scope="module")
def browser_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {**SSE_ENV, "XSTREAMS_SSE_MAX_LIFETIME_MS": str(LIFETIME_MS)}
    srv = Server(tmp_path_factory.mktemp("browser"), env=env)
    yield srv
    srv.stop()


def _chromium() -> Any:
    if not os.access(CHROMIUM, os.X_OK):
        msg = f"{CHROMIUM} is missing (apt-get install -y chromium)"
        if REQUIRE_SERVICES:
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    return sync_playwright()


def _wait(page: Any, condition: str, timeout_s: float = 10) -> Any:
    page.wait_for_function(condition, timeout=timeout_s * 1000)
    return page.evaluate("window.seen")


def test_eventsource_survives_server_disconnects(browser_server: Server, tmp_path: Path) -> None:
    appended: list[str] = []
    with httpx.Client(base_url=browser_server.url, timeout=10) as http, _chromium() as pw:

        def append(item: str) -> None:
            r = http.post("/", json=["XADD", "orders", "*", "item", item])
            appended.append(r.json()["result"])

        append("before-open")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.route(
                f"{browser_server.url}/page",
                lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE),
            )
            page.goto(f"{browser_server.url}/page")
            _wait(page, "window.seen.entries.length >= 1")
            # Appends across several server-side disconnects (each stream lives 0.7 s).
            deadline = time.monotonic() + LIFETIME_MS / 1000 * 2.5
            i = 0
            while time.monotonic() < deadline:
                append(f"item-{i}")
                i += 1
                time.sleep(0.1)  # time is the subject: appends spread over several lifetimes
            # A sentinel appended last: entries arrive in order, so a duplicate of any earlier
            # one shows before it; a second one after one more reconnect covers that resume too.
            append("sentinel-1")
            opens = _wait(page, "window.seen.entries.at(-1)?.item === 'sentinel-1'")["opens"]
            _wait(page, f"window.seen.opens > {opens}")
            append("sentinel-2")
            seen = _wait(page, "window.seen.entries.at(-1)?.item === 'sentinel-2'")
        finally:
            browser.close()
    assert [e["id"] for e in seen["entries"]] == appended
    assert [e["eventId"] for e in seen["entries"]] == appended
    assert seen["entries"][0]["item"] == "before-open"
    assert seen["opens"] >= 3, seen  # the server ended the stream and the browser came back
