"""The README's screenshots of the dashboard: ``make screenshots`` (or
``python -m tests.web.screenshots --out docs/screenshots``).

Starts a service of its own (an admin token, an API key made by ``xstreams keys create``),
fills it with a few streams that keep taking entries, a consumer group with lag and pending
entries of different ages, then signs in with the key and saves each page at 1280 and 390 px
wide with the same helpers the Playwright tests use (tests/web/tour.py).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
from pathlib import Path

import httpx

from tests.conftest import Server
from tests.support.access import FAST_KEYS, create_key
from tests.support.waiting import until
from tests.web.tour import CHROMIUM, CHROMIUM_ARGS, WIDTHS, open_page, route, shoot, sign_in

ADMIN = "screenshots-admin"
# Entries a second per stream, so the rates column has something to draw.
RATES = {"orders-eu": 40, "orders-us": 25, "sensors-1": 8, "sensors-2": 4, "audit": 1}


def _seed(api: httpx.Client) -> None:
    rng = random.Random(7)
    for stream in RATES:
        entries = [
            {"fields": {"item": rng.choice(["book", "lamp", "pen", "mug"]), "qty": str(i % 5 + 1)}}
            for i in range(120)
        ]
        api.post(f"/v1/streams/{stream}/entries", json={"entries": entries})
    group = "/v1/streams/orders-eu/groups"
    api.post(group, json={"name": "billing", "id": "0"})
    api.post(group, json={"name": "shipping", "id": "$"})
    for consumer, count in (("alice", 6), ("bob", 4), ("carol", 3)):
        api.post(f"{group}/billing/consumers/{consumer}/reads", json={"count": count})
    # Pending entries of different ages and delivery counts, as stuck work looks.
    pending = api.get(f"{group}/billing/pending", params={"count": 100}).json()["entries"]
    for i, entry in enumerate(pending):
        idle_ms = [3_000, 45_000, 90_000, 400_000, 4_000_000][i % 5]
        api.post(
            f"{group}/billing/claims",
            json={
                "consumer": entry["consumer"],
                "min_idle_ms": 0,
                "ids": [entry["id"]],
                "idle_ms": idle_ms,
                "retry_count": 1 + i % 6,
            },
        )


def _produce(url: str, stop: threading.Event) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as api:
        tick = 0
        while not stop.wait(0.25):
            tick += 1
            for stream, rate in RATES.items():
                n = max(0, round(rate / 4 * (1 + 0.5 * ((tick // 8 + len(stream)) % 3 - 1))))
                if n:
                    entries = [{"fields": {"item": "live", "n": str(tick)}}] * n
                    api.post(f"/v1/streams/{stream}/entries", json={"entries": entries})
            if tick % 4 == 0:  # dave works for billing, slower than orders come: lag moves
                group = "/v1/streams/orders-eu/groups/billing"
                got = api.post(f"{group}/consumers/dave/reads", json={"count": 25}).json()
                ids = [e["id"] for e in got["entries"]]
                if ids:
                    api.post(f"{group}/acks", json={"ids": ids[:-2]})  # two stay pending


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    out: Path = parser.parse_args().out
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as data:
        srv = Server(Path(data), "--token", ADMIN, env=FAST_KEYS)
        stop = threading.Event()
        try:
            key = create_key(
                Path(data), "dashboard", "--read", "*", "--consume", "orders-*",
                "--write", "orders-*",
            )  # fmt: skip
            api = httpx.Client(
                base_url=srv.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
            )
            _seed(api)
            until(
                lambda: httpx.get(f"{srv.url}/v1/whoami?access_token={key}").status_code == 200,
                what="the key taking effect",
                poll_s=0.1,
            )
            producer = threading.Thread(target=_produce, args=(srv.url, stop), daemon=True)
            producer.start()
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                width, height = WIDTHS["wide"]
                # Playwright's string predicates need eval, which the page's CSP forbids
                # (as conftest.py's tabs do; the policy is tested in test_static.py).
                page = browser.new_page(
                    viewport={"width": width, "height": height}, bypass_csp=True
                )
                sign_in(page, srv.url, key)
                open_page(page, srv.url, route())
                page.wait_for_timeout(12000)  # a few refreshes: rates to draw
                shoot(page, out, "streams")
                open_page(page, srv.url, route("orders-eu"))
                page.check("#live")
                page.wait_for_timeout(2500)
                shoot(page, out, "stream")
                open_page(page, srv.url, route("orders-eu", groups=True))
                page.wait_for_timeout(12000)  # the lag / pending chart fills
                shoot(page, out, "groups")
                open_page(page, srv.url, route("orders-eu", "billing"))
                page.select_option("select[name=idle]", "60000")  # the stuck ones
                page.wait_for_function("document.querySelectorAll('tr[data-id]').length < 20")
                page.click("button.sort[data-key=idle_ms]")
                page.wait_for_timeout(500)
                shoot(page, out, "pending")
                browser.close()
            api.close()
        finally:
            stop.set()
            srv.stop()
    for path in sorted(out.glob("*.png")):
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
