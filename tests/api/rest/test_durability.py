"""REST writes go through the same journal as commands: they survive a kill -9."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.conftest import Server


def test_rest_writes_survive_a_crash(tmp_path: Path) -> None:
    srv = Server(tmp_path)
    try:
        c = httpx.Client(base_url=srv.url, timeout=30)
        c.post("/v1/streams/s/entries", json={"id": "1-0", "fields": [["a", "1"], ["a", "2"]]})
        c.post("/v1/streams/s/entries", json={"entries": [{"id": "2-0", "fields": {"b": "1"}}]})
        c.post("/v1/streams/s/groups", json={"name": "g", "id": "0"})
        c.post("/v1/streams/s/groups/g/consumers/alice/reads", json={"count": 1})
        claim = {"consumer": "bob", "min_idle_ms": 0, "ids": ["1-0"], "retry_count": 5}
        c.post("/v1/streams/s/groups/g/claims", json=claim)
        c.put("/v1/streams/s/last-id", json={"last_id": "9-0"})
        c.close()
    finally:
        srv.proc.kill()  # no clean shutdown, no final snapshot: only the journal remains
        srv.proc.wait()
    again = Server(tmp_path)
    try:
        c = httpx.Client(base_url=again.url, timeout=30)
        entries = c.get("/v1/streams/s/entries", params={"fields": "pairs"}).json()["entries"]
        assert entries == [
            {"id": "1-0", "fields": [["a", "1"], ["a", "2"]]},
            {"id": "2-0", "fields": [["b", "1"]]},
        ]
        assert c.get("/v1/streams/s").json()["last_generated_id"] == "9-0"
        rows = c.get("/v1/streams/s/groups/g/pending", params={"count": 10}).json()["entries"]
        assert [(r["id"], r["consumer"], r["delivery_count"]) for r in rows] == [("1-0", "bob", 5)]
        c.close()
    finally:
        again.stop()
