"""A real browser on another origin: headless Chromium (Debian's) driven by Playwright.

The page is served from a second origin (a web server of the test's own on another port), as
an application's page would be; xstreams allows that origin by CORS. The application minted
the page a read-only JWT: its EventSource tails ``orders`` with it and receives entries, while
its attempt to append (``fetch`` with the same token, through a CORS preflight) is refused
with a 403 problem the page can read. A second EventSource uses a read-only API key: revoking
the key with ``xstreams keys revoke`` ends that stream, and the browser's reconnect is refused.

A page on another site sends the browser, top level, to a group's event stream while the
user's credential sits in the SameSite=Lax cookie: the cookie goes along, and the service
refuses to consume with it; the service's own origin, with the same cookie, consumes.
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

from tests.api.sse.test_browser import CHROMIUM, CHROMIUM_ARGS, _chromium
from tests.conftest import Server
from tests.support.access import FAST_KEYS, create_key, keys
from tests.support.waiting import until

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
    url = f"{srv.url}/v1/streams/orders?access_token={key}"
    until(lambda: httpx.get(url).status_code == 200, 10, "the new key accepted")
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


ATTACK = """<!doctype html>
<meta charset="utf-8">
<p>Cute cats.</p>
<script>location.href = TARGET;</script>
"""

DASHBOARD = """<!doctype html>
<meta charset="utf-8">
<script>
  const seen = {entries: [], errors: 0};
  const source = new EventSource("/v1/streams/orders/groups/billing/consumers/dash/events");
  source.addEventListener("entry", (e) => seen.entries.push(JSON.parse(e.data).id));
  source.onerror = () => seen.errors++;
  window.seen = seen;
</script>
"""


class _Attacker(BaseHTTPRequestHandler):
    """Another site's web server: its page sends the visitor on to the group event stream."""

    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


def test_a_cross_site_navigation_with_the_cookie_consumes_nothing(tmp_path: Path) -> None:
    """The application set the user's JWT in the ``xstreams_token`` cookie (SameSite=Lax), as
    README's example does. A page on another site (``localhost`` is another site than
    ``127.0.0.1``) navigates the browser, top level, to the group's event stream with
    ``noack=true``: Lax sends the cookie with it. The service refuses (403: the cookie was
    read, and it may not write from there), and the group is as it was: cursor, consumers,
    backlog. A page of the service's own origin, with the same cookie, consumes as before."""
    srv = Server(tmp_path, "--token", "admin", "--jwt-secret", SECRET)
    web = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    admin = httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer admin"}, timeout=10)
    token = jwt.encode(
        {
            "sub": "alice",
            "exp": int(time.time()) + 600,
            "xstreams": {"read": ["orders"], "consume": ["orders"]},
        },
        SECRET,
        algorithm="HS256",
    )
    try:
        first = admin.post("/", json=["XADD", "orders", "*", "item", "a"]).json()["result"]
        created = admin.post("/", json=["XGROUP", "CREATE", "orders", "billing", "0"])
        assert created.json() == {"result": "OK"}
        events = f"{srv.url}/v1/streams/orders/groups/billing/consumers/mallory/events?noack=true"
        _Attacker.page = ATTACK.replace("TARGET", json.dumps(events)).encode()
        with _chromium() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context()
                context.add_cookies(
                    [
                        {
                            "name": "xstreams_token",
                            "value": token,
                            "domain": "127.0.0.1",
                            "path": "/",
                            "httpOnly": True,
                            "sameSite": "Lax",
                        }
                    ]
                )
                page = context.new_page()
                with page.expect_response(lambda r: "/events" in r.url) as landed:
                    page.goto(f"http://localhost:{web.server_port}/cats", wait_until="commit")
                response = landed.value
                sent = response.request.all_headers()
                assert sent.get("sec-fetch-site") == "cross-site"
                assert "xstreams_token=" in sent.get("cookie", "")  # Lax sent it
                assert response.status == 403, response.status
                assert response.json()["code"] == "NOPERM"
                # The group is untouched: no consumer, cursor and backlog where they were.
                groups = admin.post("/", json=["XINFO", "GROUPS", "orders"]).json()["result"]
                assert groups[0][1::2] == ["billing", 0, 0, "0-0", None, 1]
                # The service's own origin (a dashboard), with the same cookie, consumes.
                page.route(
                    f"{srv.url}/app",
                    lambda route: route.fulfill(
                        status=200, content_type="text/html", body=DASHBOARD
                    ),
                )
                page.goto(f"{srv.url}/app")
                page.wait_for_function("window.seen.entries.length >= 1", timeout=10_000)
                assert page.evaluate("window.seen.entries") == [first]
                # The dashboard's own files are served to the browser as before.
                ui = page.goto(f"{srv.url}/ui/")
                assert ui is not None and ui.status == 200
            finally:
                browser.close()
        consumers = admin.post("/", json=["XINFO", "CONSUMERS", "orders", "billing"]).json()
        assert [c[1] for c in consumers["result"]] == ["dash"]
        pending = admin.post("/", json=["XPENDING", "orders", "billing"]).json()["result"]
        assert pending[0] == 1 and pending[3] == [["dash", "1"]]
    finally:
        admin.close()
        web.shutdown()
        web.server_close()
        srv.stop()
