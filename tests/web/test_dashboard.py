"""The dashboard in a real browser (Debian's Chromium through Playwright) against a running
service: every page, driven as a user drives it, and checked against the API afterwards.

A key that may read, consume and write ``orders*`` appends from the form, watches entries
arrive over the live tail (pausing it, and seeing the gap a trim leaves), jumps to an ID,
creates a group, reads as a consumer so entries are pending, claims one to another consumer,
acknowledges one with the keyboard alone, autoclaims the rest and deletes a consumer: each
time the API agrees.
A read-only JWT is shown no control it may not use, and refusals are shown in the words of the
problem document. Each page is saved at 1280 and 390 px wide, and at 390 px the page never
scrolls sideways.
"""

from __future__ import annotations

import re
import struct
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt

from tests.web.conftest import ADMIN, JWT_SECRET, Dashboard
from tests.web.tour import WIDTHS, confirm, open_page, route, shoot, sign_in


def _pending(d: Dashboard, stream: str, group: str) -> dict[str, tuple[str, int]]:
    """The PEL as the API reports it: id -> (consumer, delivery count)."""
    r = d.admin.get(f"/v1/streams/{stream}/groups/{group}/pending", params={"count": 1000})
    assert r.status_code == 200, r.text
    return {e["id"]: (e["consumer"], e["delivery_count"]) for e in r.json()["entries"]}


def _append(d: Dashboard, stream: str, *items: str) -> list[str]:
    r = d.admin.post(
        f"/v1/streams/{stream}/entries",
        json={"entries": [{"fields": {"item": item}} for item in items]},
    )
    assert r.status_code == 201, r.text
    ids: list[str] = r.json()["ids"]
    return ids


def _shoot(page: Any, d: Dashboard, name: str) -> None:
    """Both widths saved as PNGs of those widths; at 390 px nothing overflows the page."""
    for label, (path, scroll_width) in shoot(page, d.shots, name).items():
        width = WIDTHS[label][0]
        head = path.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", path
        assert struct.unpack(">I", head[16:20])[0] == width, path
        assert scroll_width <= width, f"{name} scrolls sideways at {width} px ({scroll_width})"


def _ids_shown(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all(
        "section[aria-labelledby=entries-title] td.id", "cells => cells.map(c => c.textContent)"
    )
    return ids


def test_every_page_against_the_running_service(dashboard: Dashboard, page: Any) -> None:
    d = dashboard
    s = "orders-tour"
    seeded = _append(d, s, "seed-0", "seed-1", "seed-2")
    _append(d, "payments", "not for this key")  # outside the key's grant: never listed
    sign_in(page, d.url, d.operator)
    assert "operator (key)" in page.inner_text("#who")

    # 1. Streams: the key's streams only, with length and entry times; a glob filters them.
    open_page(page, d.url, route())
    row = page.locator(f'tbody tr[data-name="{s}"]')
    row.wait_for()
    assert row.locator("td").first.inner_text() == "3"
    assert page.locator('tbody tr[data-name="payments"]').count() == 0
    page.fill("input[name=match]", "orders-t*")
    page.press("input[name=match]", "Enter")
    page.wait_for_function("location.hash === '#/?match=orders-t*'")
    page.locator(f'tbody tr[data-name="{s}"]').wait_for()
    _shoot(page, d, "streams")

    # 2. Stream: append from the form (fields as pairs, a repeated name kept).
    page.click(f'tbody tr[data-name="{s}"] th a')
    page.wait_for_selector("#append-title")
    page.fill(".pair-row >> nth=0 >> input[name=field]", "item")
    page.fill(".pair-row >> nth=0 >> input[name=value]", "from the form")
    page.click("text=+ Field")
    page.fill(".pair-row >> nth=1 >> input[name=field]", "item")
    page.fill(".pair-row >> nth=1 >> input[name=value]", "again")
    page.click("button:text-is('Append')")
    page.wait_for_selector("text=/Appended \\d+-\\d+/")
    newest = {"order": "desc", "count": 1, "fields": "pairs"}
    last = d.admin.get(f"/v1/streams/{s}/entries", params=newest).json()["entries"][0]
    assert last["fields"] == [["item", "from the form"], ["item", "again"]]
    # Jump to an ID: the page ends there, newest first.
    page.fill("input[name=jump]", seeded[1])
    page.press("input[name=jump]", "Enter")
    page.wait_for_function(
        f"document.querySelector('section[aria-labelledby=entries-title] td.id')"
        f"?.textContent === '{seeded[1]}'"
    )
    assert _ids_shown(page) == [seeded[1], seeded[0]]
    # ... or to a time: the entries up to that millisecond.
    last_id = last["id"]
    at = datetime.fromtimestamp(int(last_id.split("-")[0]) / 1000, UTC)
    page.fill("input[name=jump]", at.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
    page.press("input[name=jump]", "Enter")
    page.wait_for_function(
        f"document.querySelector('section[aria-labelledby=entries-title] td.id')"
        f"?.textContent === '{last['id']}'"
    )

    # The live tail: entries appended elsewhere arrive while watching, newest on top.
    page.check("#live")
    page.wait_for_selector("text=/^Live: 0 entries received/")
    live = _append(d, s, *(f"live-{i}" for i in range(5)))
    page.wait_for_selector("text=/^Live: 5 entries received/")
    assert _ids_shown(page)[:5] == live[::-1]
    # Paused, it shows nothing new; a trim meanwhile removes entries it never showed, and on
    # resume it says so before going on.
    page.click("button:text-is('Pause')")
    page.wait_for_selector("text=/^Paused at /")
    missed = _append(d, s, "missed-0", "missed-1", "kept")
    page.fill("input[name=threshold]", "1")
    page.click("button:text-is('Trim…')")
    confirm(page)
    page.wait_for_selector("text=/Removed \\d+ entries/")
    assert d.admin.get(f"/v1/streams/{s}").json()["length"] == 1
    assert missed[0] not in _ids_shown(page)
    page.click("button:text-is('Resume')")
    page.wait_for_selector("text=/were removed \\(trimmed or deleted\\) before they could be/")
    page.wait_for_selector("text=/^Live: 6 entries received/")
    assert _ids_shown(page)[0] == missed[-1]
    _shoot(page, d, "stream")
    page.uncheck("#live")

    # 3. Groups: create one, read as a consumer so entries are pending.
    more = _append(d, s, "work-0", "work-1", "work-2", "work-3")
    page.click("text=Consumer groups →")
    page.wait_for_selector("#create-title")
    page.fill("input[name=group]", "billing")
    page.fill("input[name=id]", "0")
    page.click("button:text-is('Create')")
    page.wait_for_selector('section[data-group="billing"]')
    assert d.admin.get(f"/v1/streams/{s}/groups/billing").json()["lag"] == 5
    page.fill("input[name=read-group]", "billing")
    page.fill("input[name=consumer]", "alice")
    page.fill("input[name=count]", "10")
    page.click("button:text-is('Read')")
    page.wait_for_selector("text=Delivered 5 entries to alice.")
    pending = _pending(d, s, "billing")
    assert sorted(pending) == sorted([missed[-1], *more])
    assert set(pending.values()) == {("alice", 1)}
    card = page.locator('section[data-group="billing"]')
    card.locator('tr[data-consumer="alice"] td >> nth=0').filter(has_text="5").wait_for()
    card.locator("svg.chart").wait_for()
    page.wait_for_timeout(2500)  # a few samples on the lag / pending chart
    _shoot(page, d, "groups")

    # 4. Pending: claim one to bob, acknowledge one with the keyboard, autoclaim the rest.
    card.locator("text=Pending entries →").click()
    page.wait_for_selector(f'tr[data-id="{more[0]}"]')
    page.fill("input[name=claim-to]", "bob")
    page.click(f'tr[data-id="{more[0]}"] button.claim')
    confirm(page)
    page.wait_for_selector("text=Claimed 1 for bob.")
    assert _pending(d, s, "billing")[more[0]] == ("bob", 2)
    page.locator(f'tr[data-id="{more[0]}"] td >> nth=2').filter(has_text="bob").wait_for()

    ack = page.locator(f'tr[data-id="{more[1]}"] button.ack')
    ack.focus()
    page.keyboard.press("Enter")  # opens the confirmation, its confirm button focused
    page.wait_for_selector("#confirm[open]")
    page.keyboard.press("Escape")  # cancelled: nothing acknowledged
    page.wait_for_selector("#confirm:not([open])", state="attached")
    assert more[1] in _pending(d, s, "billing")
    ack.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm[open]")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Acknowledged 1.")
    assert more[1] not in _pending(d, s, "billing")
    page.wait_for_selector(f'tr[data-id="{more[1]}"]', state="detached")

    # Filters: only entries delivered more than once (the claimed one).
    page.fill("input[name=deliveries]", "1")
    page.dispatch_event("input[name=deliveries]", "change")
    page.wait_for_function("document.querySelectorAll('tbody tr[data-id]').length === 1")
    assert page.locator(f'tr[data-id="{more[0]}"]').count() == 1
    _shoot(page, d, "pending")
    page.fill("input[name=deliveries]", "0")
    page.dispatch_event("input[name=deliveries]", "change")

    page.fill("input[name=autoclaim-consumer]", "carol")
    page.fill("input[name=autoclaim-idle]", "0")
    page.click("button:text-is('Autoclaim…')")
    confirm(page)
    page.wait_for_selector("text=Claimed 4 for carol.")
    left = _pending(d, s, "billing")
    assert sorted(left) == sorted([missed[-1], more[0], more[2], more[3]])
    assert {owner for owner, _ in left.values()} == {"carol"}

    # Back on the groups page: delete carol, whose pending entries leave the PEL with her.
    page.click("#nav >> text=Groups")
    carol = page.locator('section[data-group="billing"] tr[data-consumer="carol"]')
    carol.locator("button:text-is('Delete')").click()
    page.wait_for_selector("text=/its 4 pending entries leave the PEL/")
    confirm(page)
    page.wait_for_selector("text=Deleted carol (4 pending entries dropped).")
    consumers = d.admin.get(f"/v1/streams/{s}/groups/billing/consumers").json()["consumers"]
    assert [c["name"] for c in consumers] == ["alice", "bob"]
    assert _pending(d, s, "billing") == {}


def test_release_gives_a_pending_entry_back_to_the_group(dashboard: Dashboard, page: Any) -> None:
    """Release (XNACK FAIL, through the public API): the entry stays pending, shown unowned,
    its delivery count kept; the next claim of any consumer takes it first."""
    d = dashboard
    s = "orders-release"
    ids = _append(d, s, "first", "second")
    assert d.admin.post(f"/v1/streams/{s}/groups", json={"name": "billing", "id": "0"}).is_success
    read = d.admin.post(f"/v1/streams/{s}/groups/billing/consumers/alice/reads", json={})
    assert [e["id"] for e in read.json()["entries"]] == ids
    sign_in(page, d.url, d.operator)
    open_page(page, d.url, route(s, "billing"))
    page.wait_for_selector(f'tr[data-id="{ids[0]}"]')
    release = page.locator(f'tr[data-id="{ids[0]}"] button.release')
    release.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm[open]")
    page.keyboard.press("Escape")  # cancelled: nothing released
    page.wait_for_selector("#confirm:not([open])", state="attached")
    assert _pending(d, s, "billing")[ids[0]] == ("alice", 1)
    page.click(f'tr[data-id="{ids[0]}"] button.release')
    confirm(page)
    page.wait_for_selector("text=Released 1.")
    assert _pending(d, s, "billing") == {ids[0]: ("", 1), ids[1]: ("alice", 1)}
    page.locator(f'tr[data-id="{ids[0]}"] td >> nth=2').filter(has_text="released").wait_for()
    claim = {"claim_idle_ms": 3_600_000}
    r = d.admin.post(f"/v1/streams/{s}/groups/billing/consumers/bob/reads", json=claim)
    assert [(e["id"], e["delivery_count"]) for e in r.json()["entries"]] == [(ids[0], 1)]


def test_dead_letters_are_shown_apart_from_their_origin_and_redriven(
    dashboard: Dashboard, page: Any
) -> None:
    """A group's policy moves entries XNACK'ed FATAL to its dead-letter stream: the groups
    page names the policy and links that stream's dead-letter view, which shows each entry's
    own fields apart from where it came from, and redrives them all back to their origin."""
    d = dashboard
    s, dead = "orders-dlq", "orders-dlq-dead"
    ids = _append(d, s, "first", "second")
    assert d.admin.post(f"/v1/streams/{s}/groups", json={"name": "billing", "id": "0"}).is_success
    policy = {"dead_letter_stream": dead, "backoff_ms": [1000]}
    assert d.admin.put(f"/v1/streams/{s}/groups/billing/policy", json=policy).is_success
    reads = f"/v1/streams/{s}/groups/billing/consumers/alice/reads"
    assert [e["id"] for e in d.admin.post(reads, json={}).json()["entries"]] == ids
    r = d.admin.post("/", json=["XNACK", s, "billing", "FATAL", "IDS", "2", *ids])
    assert r.json() == {"result": 2}, r.text
    assert d.admin.post(reads, json={}).json()["entries"] == []  # dead-lettered, not delivered
    sign_in(page, d.url, d.operator)
    open_page(page, d.url, route(s, groups=True))
    page.click(f'a[href="#/s/{dead}/dead"]')
    page.locator("tr[data-id] td.origin").get_by_text(s, exact=True).first.wait_for()
    rows = page.locator("tr[data-id]")
    assert rows.count() == 2
    assert "item first" in rows.nth(0).locator("td.fields").inner_text()
    assert "xs-dl-" not in rows.nth(0).locator("td.fields").inner_text()
    assert "alice" in rows.nth(0).locator("td.origin").inner_text()
    # FATAL leaves a delivery count of 2^63-1: shown exactly, not rounded through a float.
    assert rows.nth(0).locator("td.num").last.inner_text() == "9,223,372,036,854,775,807"
    page.click("text=Redrive all")
    confirm(page)
    page.wait_for_selector("text=Moved 2 entries back.")
    page.wait_for_selector("text=No dead letters.")
    back = d.admin.get(f"/v1/streams/{s}/entries").json()["entries"]
    assert [e["fields"] for e in back] == [{"item": i} for i in ("first", "second")] * 2


def test_a_webhook_shows_its_health_on_the_groups_page(dashboard: Dashboard, page: Any) -> None:
    """A group's webhooks are listed on its card with their health; here one this service
    does not run (no --webhook-allow-host), which its last error says, with the setting."""
    d = dashboard
    s = "orders-hooks"
    _append(d, s, "first")
    assert d.admin.post(f"/v1/streams/{s}/groups", json={"name": "billing", "id": "0"}).is_success
    hook = {"url": "https://hooks.example.com/orders", "secret": "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="}
    r = d.admin.put(f"/v1/streams/{s}/groups/billing/webhooks/invoicer", json=hook)
    assert r.status_code == 201, r.text
    sign_in(page, d.url, d.operator)
    open_page(page, d.url, route(s, groups=True))
    row = page.locator('tr[data-webhook="invoicer"]')
    row.wait_for()
    assert "hooks.example.com/orders" in row.locator("th").inner_text()
    assert row.locator("td.error").inner_text() == (
        "not run: host 'hooks.example.com' matches no --webhook-allow-host glob"
    )
    assert row.locator("td.failures").inner_text() == "0"
    assert row.locator("td.status").inner_text() == "—"
    assert page.locator('section[data-group="billing"] .webhooks').is_visible()


def test_a_read_only_jwt_is_shown_no_control_it_may_not_use(
    dashboard: Dashboard, page: Any
) -> None:
    d = dashboard
    s = "orders-readonly"
    _append(d, s, "a", "b")
    d.admin.post(f"/v1/streams/{s}/groups", json={"name": "g", "id": "0"})
    d.admin.post(f"/v1/streams/{s}/groups/g/consumers/c/reads", json={"count": 1})
    sign_in(page, d.url, d.viewer)
    assert "viewer (jwt)" in page.inner_text("#who")
    open_page(page, d.url, route(s))
    page.wait_for_selector("text=may not write this stream")
    assert page.locator("#append-title").count() == 0
    assert page.locator("#trim-title").count() == 0
    page.check("#live")  # reading is allowed: the tail works
    later = _append(d, s, "c")
    page.wait_for_function(
        f"[...document.querySelectorAll('td.id')].some(c => c.textContent === '{later[0]}')"
    )
    page.uncheck("#live")
    open_page(page, d.url, route(s, groups=True))
    page.wait_for_selector('section[data-group="g"] tr[data-consumer="c"]')
    page.wait_for_selector("text=may not create groups, delete consumers or read as a consumer")
    for hidden in ("#create-title", "#read-title", "button:text-is('Delete')"):
        assert page.locator(hidden).count() == 0, hidden
    open_page(page, d.url, route(s, "g"))
    page.wait_for_selector("text=may not inspect or repair this group's pending entries")
    assert page.locator("button.claim").count() == 0


def test_the_usage_page_shows_a_credentials_limits_and_what_is_left(
    dashboard: Dashboard, page: Any
) -> None:
    d = dashboard
    s = "orders-usage"
    _append(d, s, "a", "b")
    claims = {
        "sub": "metered",
        "exp": int(time.time()) + 3600,
        "xstreams": {"read": ["orders*"]},
        "xstreams_limits": {"entries": "100/h", "bytes": "1k/h"},  # nothing comes back soon
    }
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    auth = {"Authorization": f"Bearer {token}"}
    read = httpx.post(d.url + "/", json=["XRANGE", s, "-", "+"], headers=auth)
    assert read.status_code == 200 and len(read.json()["result"]) == 2
    sign_in(page, d.url, token)
    page.click("#nav >> text=Usage")
    row = page.locator('#own-usage tr[data-policy="entries"]')
    row.wait_for()
    assert row.locator("td").all_inner_texts()[:3] == ["Entries read", "100/h", "98"]
    appended = page.locator('#own-usage tr[data-policy="bytes"] td')
    assert appended.all_inner_texts()[:3] == ["Bytes appended", "1000/h", "1,000"]
    assert page.locator("#key-usage").inner_text() == ""  # not the admin: no one else's


def test_refusals_are_shown_in_words(dashboard: Dashboard, page: Any) -> None:
    d = dashboard
    s = "orders-errors"
    _append(d, s, "a")
    d.admin.post(f"/v1/streams/{s}/groups", json={"name": "taken", "id": "0"})
    page.goto(f"{d.url}/ui/")
    page.fill("#credential", "xs_000000000000_not-a-key")
    page.press("#credential", "Enter")
    page.wait_for_selector("text=That credential is not valid: unknown, revoked or expired.")
    sign_in(page, d.url, d.operator)
    open_page(page, d.url, route(s))
    page.fill("input[name=id]", "1-0")
    page.fill("input[name=field]", "f")
    page.click("button:text-is('Append')")
    alert = page.locator("[role=alert]").filter(has_text="equal or smaller")
    alert.wait_for()
    assert alert.inner_text() == (  # the problem's detail: Redis's words, and the stream
        "The ID specified in XADD is equal or smaller than the target stream top item"
        " (stream 'orders-errors')"
    )
    open_page(page, d.url, route(s, groups=True))
    page.fill("input[name=group]", "taken")
    page.click("button:text-is('Create')")
    page.locator("[role=alert]").filter(has_text="BUSYGROUP").wait_for()
    # A stream outside the key's grant: the API's NOPERM, in words.
    open_page(page, d.url, route("payments"))
    page.locator("[role=alert]").filter(has_text="NOPERM").first.wait_for()


def test_a_stream_whose_name_is_not_utf8(dashboard: Dashboard, page: Any) -> None:
    """Names are bytes: the byte 0xFF is shown as \\xff, and links, reads and writes reach
    the same stream (``%FF`` in URLs, ``\\udcff`` in JSON)."""
    d = dashboard
    r = d.admin.post("/", content=b'["XADD", "orders-\\udcff", "1-1", "item", "\\udcfe"]')
    assert r.json() == {"result": "1-1"}, r.text
    sign_in(page, d.url, d.operator)
    open_page(page, d.url, route())
    page.locator("tbody th a").get_by_text("orders-\\xff", exact=True).click()
    page.wait_for_selector("h1:has-text('orders-\\\\xff')")
    page.wait_for_selector("td.fields:has-text('item \\\\xfe')")
    assert _ids_shown(page) == ["1-1"]
    page.fill("input[name=field]", "from")
    page.fill("input[name=value]", "the page")
    page.click("button:text-is('Append')")
    page.wait_for_selector("text=/Appended \\d+-\\d+/")
    rows = d.admin.get("/v1/streams/orders-%FF/entries", params={"fields": "pairs"}).json()
    assert [e["fields"] for e in rows["entries"]] == [[["item", "\udcfe"]], [["from", "the page"]]]


def _luminance(css: str) -> float:
    """WCAG relative luminance of an ``rgb(r, g, b)`` colour."""
    channels = [int(x) / 255 for x in re.findall(r"\d+", css)[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


COLOURS = """() => {
  const of = (sel, prop) => getComputedStyle(document.querySelector(sel))[prop];
  return {background: of("body", "backgroundColor"), surface: of(".table-wrap", "backgroundColor"),
          text: of("body", "color"), muted: of(".pager .muted", "color"),
          link: of("tbody th a", "color")};
}"""


def test_readable_in_light_and_dark_schemes(dashboard: Dashboard, browser: Any) -> None:
    """The scheme follows prefers-color-scheme; text keeps WCAG AA contrast in both."""
    d = dashboard
    _append(d, "orders-schemes", "a")
    seen = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(
            color_scheme=scheme, viewport={"width": 1280, "height": 900}, bypass_csp=True
        )
        page = context.new_page()
        sign_in(page, d.url, d.operator)
        open_page(page, d.url, route())
        page.locator('tbody tr[data-name="orders-schemes"]').wait_for()
        c = seen[scheme] = page.evaluate(COLOURS)
        if scheme == "dark":
            page.screenshot(path=str(d.shots / "streams-dark.png"))
        context.close()
        for fg in ("text", "muted", "link"):
            for bg in ("background", "surface"):
                assert _contrast(c[fg], c[bg]) >= 4.5, (scheme, fg, bg, c)
    assert _luminance(seen["light"]["background"]) > 0.8
    assert _luminance(seen["dark"]["background"]) < 0.05


def test_screenshots_were_saved_under_the_tests_output(dashboard: Dashboard, browser: Any) -> None:
    """Runs after the tour (pytest keeps file order): each page at both widths. Needs the
    browser as the tour does, so it skips (or fails, in CI) with it rather than alone."""
    saved = sorted(p.name for p in Path(dashboard.shots).glob("*-*.png"))
    widths = WIDTHS.values()
    assert saved == sorted(
        [f"{n}-{w}.png" for n in ("streams", "stream", "groups", "pending") for w, _ in widths]
        + ["streams-dark.png"]
    )


# Installed before the page loads: every frame's distance from the previous one, the long
# tasks Chromium reports, and how many table rows each DOM update added (one update per
# animation frame while tailing, not one per entry).
FRAME_MONITOR = """
window.frames_ = {measuring: false, maxGap: 0, frames: 0, longTasks: [], batches: []};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (frames_.measuring) frames_.longTasks.push(e.duration);
}).observe({type: "longtask", buffered: true});
let last = performance.now();
requestAnimationFrame(function tick(t) {
  if (frames_.measuring) { frames_.maxGap = Math.max(frames_.maxGap, t - last); frames_.frames++; }
  last = t;
  requestAnimationFrame(tick);
});
new MutationObserver((records) => {
  if (!frames_.measuring) return;
  let rows = 0;
  for (const r of records) for (const n of r.addedNodes) if (n.nodeName === "TR") rows++;
  if (rows) frames_.batches.push(rows);
}).observe(document, {childList: true, subtree: true});
window.measure = (on) => {
  Object.assign(frames_, {measuring: on, maxGap: 0, frames: 0, longTasks: [], batches: []});
  last = performance.now();
};
"""
RATE = 1000  # entries per second appended to the tailed stream
FRAME_LIMIT_MS = 200


class Producer(threading.Thread):
    """Appends RATE entries a second to one stream, in batches every 20 ms, until stopped."""

    def __init__(self, url: str, stream: str) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
        )
        self.stream = stream
        self.ids: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        tick = 0.02
        while not self.stopped.is_set():
            due = int((time.monotonic() - started) * RATE) - len(self.ids)
            if due > 0:
                body = {"entries": [{"fields": {"n": str(len(self.ids) + i)}} for i in range(due)]}
                r = self.client.post(f"/v1/streams/{self.stream}/entries", json=body)
                self.ids += r.json()["ids"]
            self.stopped.wait(tick)
        self.client.close()

    def rate(self, since: int, seconds: float) -> float:
        return (len(self.ids) - since) / seconds


def _longest(figures: dict[str, Any]) -> float:
    return max(figures["maxGap"], *figures["longTasks"], 0)


def _measured(page: Any, seconds: float, windows: int = 3) -> dict[str, Any]:
    """Frame figures over a window of ``seconds``, the best of up to ``windows`` windows.

    The load is steady (a refresh every 2 s, entries every 20 ms), so every window holds all
    the page's periodic work; what differs between windows is the machine's other load, which
    only ever lengthens frames (a test runner shares its cores). A window within the limit
    shows the page's own work fits in it.
    """
    best: dict[str, Any] | None = None
    for _ in range(windows):
        page.evaluate("measure(true)")
        page.wait_for_timeout(seconds * 1000)
        figures: dict[str, Any] = page.evaluate("frames_")
        page.evaluate("measure(false)")
        if best is None or _longest(figures) < _longest(best):
            best = figures
        if _longest(best) < FRAME_LIMIT_MS:
            break
    assert best is not None
    return best


def test_responsive_with_10000_streams_and_a_tail_at_1000_entries_per_second(
    dashboard: Dashboard, page: Any
) -> None:
    d = dashboard
    commands = [["XADD", f"orders-many-{i:05}", "*", "n", "1"] for i in range(10_000)]
    r = d.admin.post("/pipeline", json=commands)
    assert r.status_code == 200 and all("result" in x for x in r.json())
    hot = "orders-hot"
    _append(d, hot, "first")
    page.add_init_script(FRAME_MONITOR)
    sign_in(page, d.url, d.operator)
    producer = Producer(d.url, hot)
    producer.start()
    try:
        # The streams page, a page of 50 out of 10,000 (and more), refreshing while the hot
        # stream takes 1,000 entries a second.
        open_page(page, d.url, route())
        page.wait_for_selector("text=/Page 1: \\d+ streams$/")
        first_page = page.eval_on_selector_all("tbody tr", "rows => rows.map(r => r.dataset.name)")
        assert 50 <= len(first_page) < 200
        page.click("text=Next →")
        page.wait_for_selector("text=/Page 2: /")
        second_page = page.eval_on_selector_all("tbody tr", "rows => rows.map(r => r.dataset.name)")
        assert not set(first_page) & set(second_page)
        listing = _measured(page, 3)

        # The hot stream's live tail.
        open_page(page, d.url, route(hot))
        page.check("#live")
        page.wait_for_selector("text=/^Live: /")
        since = len(producer.ids)
        t0 = time.monotonic()
        tail = _measured(page, 3)
        rate = producer.rate(since, time.monotonic() - t0)
        producer.stopped.set()
        producer.join(10)
        newest = producer.ids[-1]
        # Every entry arrives: the tail ends on the last one appended.
        page.wait_for_selector(f"text=/newest {newest}$/", timeout=20_000)
        shown_first = _ids_shown(page)[0]
        assert shown_first == newest
    finally:
        producer.stopped.set()
        producer.join(10)
    rows_added = sum(tail["batches"])
    print(
        f"\nstreams page (10,000 streams): {listing['frames']} frames in 3 s, longest "
        f"{listing['maxGap']:.0f} ms, long tasks {sorted(listing['longTasks'])[-3:]}"
        f"\nlive tail at {rate:.0f} entries/s: {tail['frames']} frames in 3 s, longest "
        f"{tail['maxGap']:.0f} ms, long tasks {sorted(tail['longTasks'])[-3:]}, "
        f"{len(tail['batches'])} DOM updates for {rows_added} rows"
    )
    assert rate > RATE * 0.7, rate
    for name, figures in (("streams page", listing), ("live tail", tail)):
        assert figures["frames"] > 0, name
        assert figures["maxGap"] < FRAME_LIMIT_MS, (name, figures["maxGap"])
        assert max(figures["longTasks"], default=0) < FRAME_LIMIT_MS, (name, figures)
    # Rendered in batches: many entries per DOM update, at most one update per frame.
    assert len(tail["batches"]) <= tail["frames"] + 2
    assert rows_added / max(1, len(tail["batches"])) > 3
