"""Driving the dashboard in a browser: what the Playwright tests and the README's screenshots
(``python -m tests.web.screenshots``) share, so the screenshots show what the tests check.

Chromium is Debian's (/usr/bin/chromium, never a browser download), started with the flags of
tests/api/sse/test_browser.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.api.sse.test_browser import CHROMIUM, CHROMIUM_ARGS

__all__ = [
    "CHROMIUM", "CHROMIUM_ARGS", "PAGES", "WIDTHS", "confirm", "open_page", "route", "shoot",
    "sign_in",
]  # fmt: skip

WIDTHS = {"wide": (1280, 900), "narrow": (390, 844)}
PAGES = ("streams", "stream", "groups", "pending")


def route(stream: str | None = None, group: str | None = None, *, groups: bool = False) -> str:
    """The dashboard's hash route to a page (names quoted as the page quotes them)."""
    if stream is None:
        return "#/"
    path = f"#/s/{quote(stream, safe='')}"
    if group is not None:
        return f"{path}/groups/{quote(group, safe='')}/pending"
    return f"{path}/groups" if groups else path


def open_page(page: Any, base_url: str, hash_route: str) -> None:
    """Go to a page and wait until it has drawn its data (its loading line is gone)."""
    page.goto(f"{base_url}/ui/{hash_route}")
    page.wait_for_function("!document.querySelector('main').textContent.includes('Loading')")
    page.wait_for_selector("main h1")


def sign_in(page: Any, base_url: str, credential: str) -> None:
    """Sign in as a user would: type the credential, press Enter."""
    page.goto(f"{base_url}/ui/")
    page.wait_for_selector("#credential")
    page.fill("#credential", credential)
    page.press("#credential", "Enter")
    page.wait_for_selector("#who button")  # "Sign out": signed in


def shoot(page: Any, out: Path, name: str, settle_ms: int = 400) -> dict[str, tuple[Path, int]]:
    """Screenshots of the page at both widths (``{name}-1280.png``, ``{name}-390.png``),
    each with the page's scroll width then: wider than the viewport means the page itself
    scrolls sideways (tables may scroll within their own frame, the page may not)."""
    out.mkdir(parents=True, exist_ok=True)
    shots = {}
    for label, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(settle_ms)
        path = out / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        shots[label] = (path, int(page.evaluate("document.documentElement.scrollWidth")))
    page.set_viewport_size({"width": WIDTHS["wide"][0], "height": WIDTHS["wide"][1]})
    return shots


def confirm(page: Any) -> None:
    """Accept the confirmation dialog that destructive actions open."""
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm-ok")
    page.wait_for_selector("#confirm:not([open])", state="attached")
