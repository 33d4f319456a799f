"""XDELEX / XACKDEL under ACKED: a group's need is looked at before the stream, so an ID no
longer (or not yet) in the stream that a group still refers to answers 2, not -1. Every
reply below is what redis-server 8.6.3 answered to the same commands."""

from __future__ import annotations

from app.engine.store import Store


def _arranged() -> Store:
    """`s` holds 1-0 .. 4-0; group `g` delivered 1-0 .. 3-0 to `a` (its last-delivered ID is
    3-0), then 2-0 was deleted while pending (a dangling reference)."""
    store = Store()
    for i in (1, 2, 3, 4):
        store.execute(["XADD", "s", f"{i}-0", "n", str(i)])
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    store.execute(["XREADGROUP", "GROUP", "g", "a", "COUNT", "3", "STREAMS", "s", ">"])
    store.execute(["XDEL", "s", "2-0"])
    return store


def test_xdelex_acked_answers_kept_for_ids_a_group_still_refers_to() -> None:
    store = _arranged()
    xdelex = ["XDELEX", "s", "ACKED", "IDS", "1"]
    assert store.execute([*xdelex, "2-0"]) == [2]  # gone, but pending in g
    assert store.execute([*xdelex, "2-5"]) == [-1]  # gone, delivered, not pending
    assert store.execute([*xdelex, "3-5"]) == [2]  # never there, after g's last-delivered ID
    assert store.execute(["XDELEX", "s", "KEEPREF", "IDS", "1", "3-5"]) == [-1]
    assert store.execute(["XDELEX", "s", "DELREF", "IDS", "1", "3-5"]) == [-1]
    store.execute(["XADD", "t", "1-0", "n", "1"])
    assert store.execute(["XDELEX", "t", "ACKED", "IDS", "1", "5-0"]) == [-1]  # no groups


def test_xackdel_acked_keeps_a_dangling_id_another_group_needs() -> None:
    store = _arranged()
    store.execute(["XGROUP", "CREATE", "s", "h", "0"])  # h has delivered nothing
    assert store.execute(["XACKDEL", "s", "g", "ACKED", "IDS", "1", "2-0"]) == [2]
    assert store.execute(["XPENDING", "s", "g"]).count == 2  # 2-0 acknowledged in g all the same
