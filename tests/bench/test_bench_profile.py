"""bench/profile.py's summary of py-spy's collapsed stacks: shares of the server's samples,
the event loop's and the CLI's frames folded away, a pool thread waiting for work not
counted as the server's time. No server, no py-spy."""

from __future__ import annotations

from bench.profile import summary

# As py-spy writes them: most files named from their sys.path entry, some by absolute path.
LOOP = (
    "<module> (xstreams:6);main (app/cli/__init__.py:290);"
    "Runner.run (/usr/lib/python3.11/asyncio/runners.py:118)"
)
HANDLE = "handle (/work/main/app/api/rest/compiled.py:281)"
POOL = "_worker (concurrent/futures/thread.py:81)"
RAW = "\n".join(
    [
        f"{LOOP};{HANDLE};xadd (app/engine/x.py:9) 30",
        f"{LOOP};{HANDLE} 10",
        f"{LOOP};send (/v/lib/python3.11/site-packages/uvicorn/h.py:5) 60",
        f"Thread._bootstrap (threading.py:1002);{POOL} 500",
        "not a sample line",
    ]
)


def test_shares_are_of_the_servers_own_samples() -> None:
    total, lines = summary(RAW)
    assert total == 100  # the idle pool thread's 500 samples are not the server's time
    text = "\n".join(lines)
    assert "      40.0  handle (app/api/rest/compiled.py:281)" in text
    assert "      30.0  xadd (app/engine/x.py:9)" in text
    assert "      60.0  send (uvicorn/h.py:5)" in text
    assert "Runner.run" not in text and "<module>" not in text
    self_part = text.split("self %")[1]
    assert "      60.0  send (uvicorn/h.py:5)" in self_part
    assert "      10.0  handle (app/api/rest/compiled.py:281)" in self_part
