"""``xstreams export`` / ``import``: a stream to JSON lines and back."""

from __future__ import annotations

import json
from pathlib import Path

from tests.client.support import json_lines, ok, run
from tests.conftest import Commands, Server


def test_export_then_import_gives_the_same_entries(
    server: Server, xs: Commands, tmp_path: Path
) -> None:
    for i in range(1200):  # past one page of range, several import batches
        xs("XADD", "src", "*", "n", str(i), "tag", "é")
    exported = ok(server.url, "export", "src")
    assert len(exported.splitlines()) == 1200
    ok(server.url, "import", "dst", "--batch", "500", stdin=exported)
    assert ok(server.url, "range", "dst", "--json") == ok(server.url, "range", "src", "--json")

    path = tmp_path / "src.jsonl"
    ok(server.url, "export", "src", "-o", str(path))
    assert path.read_text() == exported
    ok(server.url, "import", "fresh", "-i", str(path), "--new-ids")
    fresh = json_lines(ok(server.url, "range", "fresh", "--json"))
    assert [e["fields"] for e in fresh] == [e["fields"] for e in json_lines(exported)]


def test_import_rejects_a_line_that_is_not_an_entry(server: Server, xs: Commands) -> None:
    result = run(server.url, "import", "bad", stdin=json.dumps({"n": "1"}) + "\n")
    assert result.exit_code == 2
    assert "line 1" in result.stderr
