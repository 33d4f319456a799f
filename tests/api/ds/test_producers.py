"""A stream's record keeps at most ``ds_max_producers`` producers, the least recent forgotten
first, on the three targets: a record rewritten on every append stays small."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.targets import TARGET_PARAMS, Served, served_on

S = "/ds/v1/stream/many"
TEXT = {"Content-Type": "text/plain"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


def producer(name: str, seq: int) -> dict[str, str]:
    return {**TEXT, "Producer-Id": name, "Producer-Epoch": "0", "Producer-Seq": str(seq)}


async def test_the_least_recent_producer_is_forgotten_past_the_cap(served: Served) -> None:
    async with served(ds_max_producers=2) as c:
        assert (await c.put(S, headers=TEXT)).status_code == 201
        assert (await c.post(S, headers=producer("p1", 0), content="a")).status_code == 200
        assert (await c.post(S, headers=producer("p2", 0), content="b")).status_code == 200
        assert (await c.post(S, headers=producer("p1", 1), content="c")).status_code == 200
        # p1 was used again after p2: p2 is the least recent when p3 arrives.
        assert (await c.post(S, headers=producer("p3", 0), content="d")).status_code == 200
        # p2 was forgotten: its next message is a gap from a producer never seen.
        gap = await c.post(S, headers=producer("p2", 1), content="e")
        assert gap.status_code == 409 and gap.headers["producer-expected-seq"] == "0"
        # p1 and p3 are remembered: a repeat is a duplicate, the next one appends.
        assert (await c.post(S, headers=producer("p1", 1), content="c")).status_code == 204
        assert (await c.post(S, headers=producer("p3", 1), content="f")).status_code == 200
        assert (await c.get(S, params={"offset": "-1"})).text == "abcdf"
