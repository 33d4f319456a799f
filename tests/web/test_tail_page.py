"""``/ui/tail.html``: the README's EventSource example, served by the service itself. It shows
each entry appended after it opened, resumes after the last one it showed when reloaded, and
gets in with the ``xstreams_token`` cookie or an ``access_token`` in its own address."""

from __future__ import annotations

from typing import Any

from tests.web.conftest import Dashboard

STREAM = "orders-tail:eu-west-1"


def _xadd(d: Dashboard, item: str) -> str:
    r = d.admin.post("/", json=["XADD", STREAM, "*", "item", item])
    entry_id: str = r.json()["result"]
    return entry_id


def _shown(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all("#entries li", "lis => lis.map(li => li.dataset.id)")
    return ids


def _wait_for(page: Any, ids: list[str]) -> None:
    page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('#entries li')]"
        ".map(li => li.dataset.id)) === JSON.stringify(ids)",
        arg=ids,
    )


def test_new_entries_appear_and_a_reload_resumes_after_the_last(
    dashboard: Dashboard, browser: Any
) -> None:
    d = dashboard
    _xadd(d, "before the page")  # not shown: the page starts at the stream's end ($)
    context = browser.new_context()
    context.add_cookies([{"name": "xstreams_token", "value": d.operator, "url": d.url}])
    page = context.new_page()
    try:
        address = f"{d.url}/ui/tail.html?stream={STREAM.replace(':', '%3A')}"
        page.goto(address)
        page.wait_for_selector("#status >> text=Live.")
        assert page.inner_text("#stream") == STREAM
        first = [_xadd(d, "book"), _xadd(d, "lamp")]
        _wait_for(page, first)
        assert '{"item":"book"}' in page.inner_text("#entries li >> nth=0")

        page.goto("about:blank")  # away, while one more entry comes
        missed = _xadd(d, "pen")
        page.goto(address)  # back in the same tab: it resumes after the last entry shown
        _wait_for(page, [missed])
        page.wait_for_selector("#status >> text=Live.")
        later = _xadd(d, "mug")
        _wait_for(page, [missed, later])
    finally:
        context.close()


def test_an_access_token_in_the_address_or_nothing(dashboard: Dashboard, browser: Any) -> None:
    d = dashboard
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{d.url}/ui/tail.html?stream={STREAM}&access_token={d.operator}")
        page.wait_for_selector("#status >> text=Live.")
        entry = _xadd(d, "with a token")
        _wait_for(page, [entry])

        page.goto(f"{d.url}/ui/tail.html?stream={STREAM}")  # no cookie, no token: refused
        page.wait_for_selector("#status >> text=Refused (no credential?) or ended.")
        assert _shown(page) == []
    finally:
        context.close()
