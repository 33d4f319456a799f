"""Every page at 390 px (an iPhone) and 1280 px with long, realistic names: nothing scrolls
sideways, no column is cut, no name or ID breaks inside a word (tests/web/layout.py says how
that is measured), and the groups chart has its axes and units.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.waiting import until
from tests.web.conftest import Dashboard
from tests.web.layout import misfits
from tests.web.tour import WIDTHS, open_page, route, sign_in

STREAM = "orders-eu-west-1:2026-11-invoices-reprocessing"
DEAD = STREAM + ".dead-letters"
GROUP = "invoice-reprocessors.eu-west-1.primary"
CONSUMERS = (
    "billing-worker-eu-west-1a-7f9c8d6b5a-x2k4p-reprocessing",  # 55 characters
    "billing-worker-eu-west-1b-0a1b2c3d4e-q9z8y",
)
HOOK = "invoice-reprocessing-notifier-eu-west-1"
SEQ = 1234567890123456789  # 19 digits: IDs as long as a sequence number makes them


@pytest.fixture(scope="module")
def long_names(dashboard: Dashboard) -> Iterator[list[str]]:
    """A stream, group, consumers, webhook and dead-letter stream with long names, and entry
    IDs with 19-digit sequence numbers, some pending with each consumer, one dead-lettered."""
    d = dashboard
    ms = int(time.time() * 1000)
    ids = [f"{ms}-{SEQ + i}" for i in range(6)]
    for i, entry_id in enumerate(ids):
        r = d.admin.post("/", json=["XADD", STREAM, entry_id, "invoice", f"inv-2026-11-{i:06d}"])
        assert r.json() == {"result": entry_id}, r.text
    groups = f"/v1/streams/{STREAM}/groups"
    assert d.admin.post(groups, json={"name": GROUP, "id": "0"}).is_success
    policy = {"dead_letter_stream": DEAD, "backoff_ms": [1000]}
    assert d.admin.put(f"{groups}/{GROUP}/policy", json=policy).is_success
    hook = {
        "url": "https://hooks.example.com/eu-west-1/invoices/reprocessing/notify",
        "secret": "whsec_MDEyMzQ1Njc4OWFiY2RlZg==",
    }
    assert d.admin.put(f"{groups}/{GROUP}/webhooks/{HOOK}", json=hook).is_success
    for consumer in CONSUMERS:
        got = d.admin.post(f"{groups}/{GROUP}/consumers/{consumer}/reads", json={"count": 3})
        assert len(got.json()["entries"]) == 3, got.text
    r = d.admin.post("/", json=["XNACK", STREAM, GROUP, "FATAL", "IDS", "1", ids[0]])
    assert r.json() == {"result": 1}, r.text
    # The group's next read moves it to the dead-letter stream (as XREADGROUP does).
    reads = f"{groups}/{GROUP}/consumers/{CONSUMERS[0]}/reads"
    until(lambda: d.admin.post(reads, json={}).is_success and _exists(d, DEAD))
    yield ids


def _exists(d: Dashboard, stream: str) -> bool:
    return d.admin.get(f"/v1/streams/{stream}").status_code == 200


PAGES = {
    "streams": (route(), f'tbody tr[data-name="{STREAM}"] td.rate svg'),
    "stream": (route(STREAM), "section[aria-labelledby=entries-title] td.id"),
    "groups": (route(STREAM, groups=True), f'tr[data-webhook="{HOOK}"]'),
    "pending": (route(STREAM, GROUP), "tr[data-id] td.id"),
    "dead": (f"#/s/{DEAD.replace(':', '%3A')}/dead", "tr[data-id] td.origin a"),
}


@pytest.mark.parametrize("width", [w for w, _ in WIDTHS.values()])
@pytest.mark.parametrize("name", PAGES)
def test_long_names_fit_without_breaking_a_word(
    dashboard: Dashboard, browser: Any, long_names: list[str], name: str, width: int
) -> None:
    d = dashboard
    context = browser.new_context(viewport={"width": width, "height": 844}, bypass_csp=True)
    page = context.new_page()
    try:
        sign_in(page, d.url, d.operator)
        hash_route, ready = PAGES[name]
        open_page(page, d.url, hash_route)
        page.wait_for_selector(ready)
        assert misfits(page) == []
        # The long names are all there, each whole in one element (its text or its title).
        names = page.eval_on_selector_all(
            "main .name", "els => els.map(e => e.title || e.textContent)"
        )
        expected = {
            "streams": [STREAM],
            "stream": [STREAM, *long_names[1:]],
            "groups": [STREAM, GROUP, *CONSUMERS, HOOK, DEAD],
            "pending": [GROUP, STREAM, *CONSUMERS, *long_names[1:]],
            "dead": [DEAD, STREAM, GROUP, CONSUMERS[0], long_names[0]],
        }[name]
        assert set(expected) <= set(names), sorted(set(expected) - set(names))
    finally:
        context.close()


def test_the_group_chart_has_labelled_axes_and_units(
    dashboard: Dashboard, browser: Any, long_names: list[str]
) -> None:
    """The lag / pending chart says what it counts (entries) and when (seconds ago to now),
    as text a reader and a screen reader see, at both widths."""
    d = dashboard
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    try:
        sign_in(page, d.url, d.operator)
        open_page(page, d.url, route(STREAM, groups=True))
        chart = page.locator(f'section[data-group="{GROUP}"] figure.chart-frame')
        chart.wait_for()
        for width, height in WIDTHS.values():
            page.set_viewport_size({"width": width, "height": height})
            assert chart.locator(".y-unit").inner_text() == "entries"
            ticks = chart.locator(".x-ticks span").all_inner_texts()
            assert ticks[-1] == "now" and ticks[0].endswith("s ago"), ticks
            y_ticks = chart.locator(".y-ticks span").all_inner_texts()
            assert y_ticks[-1] == "0" and int(y_ticks[0].replace(",", "")) >= 3, y_ticks
            assert chart.locator(".x-unit").inner_text() == "time"
            for label in (".y-unit", ".x-ticks span >> nth=0", ".x-unit"):
                assert chart.locator(label).is_visible(), label
        assert misfits(page) == []
    finally:
        context.close()
