"""A real browser on another origin: headless Chromium (Debian's) driven by Playwright.

The page is served from a second origin (a web server of the test's own on another port), as
an application's page would be; xstreams allows that origin by CORS. The application minted
the page a read-only JWT: its EventSource tails ``orders`` with it and receives entries, while
its attempt to append (``fetch`` with the same token, through a CORS preflight) is refused
with a 403 problem the page can read. A second EventSource uses a read-only API key: revoking
the key with ``xstreams keys revoke`` ends that stream, and the browser's reconnect is refused.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
import pytest

from tests.conftest import Server
from tests.sse.test_browser import CHROMIUM, CHROMIUM_ARGS, _chromium
from tests.support.access import FAST_KEYS, create_key, keys

SECRET = "the application's signing secret, shared with xstreams"

PAGE = """<!doctype html>
<meta charset="utf-8">
<script>
  const {xs, token, key} = CONFIG;
  const seen = {entries: [], keyEntries: [], keyState: null, append: null};
  const tail = new EventSource(`${xs}/v1/streams/orders/events?last_id=0&access_token=${token}`);
  tail.addEventListener("entry", (e) => seen.entries.push(JSON.parse(e.data).id));
  fetch(`${xs}/v1/streams/orders/entries`, {
    method: "POST",
    headers: {"Authorization": `Bearer ${token}`, "Content-Type": "application/json"},
    body: JSON.stringify({fields: {item: "from the page"}}),
  }).then(async (r) => { seen.append = {status: r.status, body: await r.json()}; },
          (e) => { seen.append = {error: String(e)}; });
  const keyed = new EventSource(`${xs}/v1/streams/orders/events?last_id=0&access_token=${key}`);
  keyed.addEventListener("entry", (e) => seen.keyEntries.push(JSON.parse(e.data).id));
  keyed.onerror = () => { seen.keyState = keyed.readyState; };
  window.seen = seen;
</script>
"""


pages: dict[str, bytes] = {}


class _Page(BaseHTTPRequestHandler):
    """The application's own web server, on its own origin: it serves the page."""

    def do_GET(self) -> None:
        body = pages[f"http://127.0.0.1:{self.server.server_port}"]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def origins(tmp_path: Path) -> Iterator[tuple[Server, str, Path]]:
    web = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    page_origin = f"http://127.0.0.1:{web.server_port}"
    env = {**FAST_KEYS, "XSTREAMS_SSE_RETRY_MS": "300"}
    srv = Server(
        tmp_path, "--token", "admin", "--jwt-secret", SECRET, "--cors-origin", page_origin,
        env=env,
    )  # fmt: skip
    yield srv, page_origin, tmp_path
    srv.stop()
    web.shutdown()
    web.server_close()


def test_a_page_on_another_origin_tails_with_a_read_only_jwt(
    origins: tuple[Server, str, Path],
) -> None:
    srv, page_origin, data = origins
    # What the application does for its signed-in user: mint a short-lived read-only token.
    token = jwt.encode(
        {"sub": "alice", "exp": int(time.time()) + 600, "xstreams": {"read": ["orders"]}},
        SECRET,
        algorithm="HS256",
    )
    key = create_key(data, "page", "--read", "orders")
    admin = httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer admin"}, timeout=10)
    first = admin.post("/", json=["XADD", "orders", "*", "item", "a"]).json()["result"]
    # The running service sees the new key within its refresh period.
    deadline = time.monotonic() + 10
    while httpx.get(f"{srv.url}/v1/streams/orders?access_token={key}").status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    config = json.dumps({"xs": srv.url, "token": token, "key": key})
    pages[page_origin] = PAGE.replace("CONFIG", config).encode()
    with _chromium() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{page_origin}/app")
            page.wait_for_function("window.seen.entries.length >= 1", timeout=10_000)
            later = admin.post("/", json=["XADD", "orders", "*", "item", "b"]).json()["result"]
            page.wait_for_function("window.seen.entries.length >= 2", timeout=10_000)
            page.wait_for_function("window.seen.append !== null", timeout=10_000)
            page.wait_for_function("window.seen.keyEntries.length >= 2", timeout=10_000)
            seen = page.evaluate("window.seen")
            assert seen["entries"] == [first, later]
            assert seen["append"]["status"] == 403, seen["append"]
            assert seen["append"]["body"]["code"] == "NOPERM"
            # Revoke the key: its stream ends, and the browser's reconnect is refused (401),
            # which closes the EventSource for good (readyState 2).
            done = keys(data, "revoke", "page")
            assert done.returncode == 0, done.stderr
            page.wait_for_function("window.seen.keyState === 2", timeout=15_000)
            # The JWT's stream is untouched by the key's revocation.
            again = admin.post("/", json=["XADD", "orders", "*", "item", "c"]).json()["result"]
            page.wait_for_function("window.seen.entries.length >= 3", timeout=10_000)
            seen = page.evaluate("window.seen")
        finally:
            browser.close()
    admin.close()
    assert seen["entries"] == [first, later, again]
    assert seen["keyEntries"] == [first, later]
    # Nothing from the page was appended.
    assert [e[1][1] for e in httpx.post(
        srv.url + "/", json=["XRANGE", "orders", "-", "+"],
        headers={"Authorization": "Bearer admin"},
    ).json()["result"]] == ["a", "b", "c"]  # fmt: skip
