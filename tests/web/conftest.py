"""One service and one browser for the module: the dashboard against a real ``xstreams serve``.

The service requires credentials (an admin token), as a deployed one does; the dashboard signs
in with an API key made by ``xstreams keys create`` that may read, consume and write the
``orders*`` streams, or with a JWT an application minted that may only read them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.api.sse.test_browser import _chromium
from tests.conftest import Server
from tests.support.access import FAST_KEYS, create_key
from tests.support.waiting import until
from tests.web.tour import CHROMIUM, CHROMIUM_ARGS, WIDTHS

ADMIN = "admin-token-of-the-web-tests"
JWT_SECRET = "the application's secret for the web tests"


@dataclass
class Dashboard:
    server: Server
    operator: str  # read, consume, write on orders*
    viewer: str  # a JWT: read on orders*
    admin: httpx.Client  # the API, as the admin: to arrange and to check what the UI did
    shots: Path  # the screenshots the tests save

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    data = tmp_path_factory.mktemp("web")
    env = {**FAST_KEYS, "XSTREAMS_SSE_RETRY_MS": "300"}
    srv = Server(data, "--token", ADMIN, "--jwt-secret", JWT_SECRET, env=env)
    try:
        grant = ("--read", "orders*", "--consume", "orders*", "--write", "orders*")
        operator = create_key(data, "operator", *grant)
        claims = {
            "sub": "viewer",
            "exp": int(time.time()) + 3600,
            "xstreams": {"read": ["orders*"]},
        }
        viewer = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
        auth = {"Authorization": f"Bearer {operator}"}
        until(lambda: httpx.get(srv.url + "/v1/whoami", headers=auth).status_code == 200)
        admin = httpx.Client(
            base_url=srv.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
        )
        yield Dashboard(srv, operator, viewer, admin, tmp_path_factory.mktemp("screenshots"))
        admin.close()
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with _chromium() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage); a script error on it fails the test."""
    width, height = WIDTHS["wide"]
    # The page's CSP forbids eval, which Playwright's string predicates use; the policy itself
    # is checked on the headers (test_static.py).
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.set_default_timeout(15_000)
    yield tab
    context.close()
    assert not errors, errors
