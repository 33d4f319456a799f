"""A group's webhooks on the engine: set, replaced, removed, gone with their group, and
rebuilt the same from the journal and from a snapshot (format 5), beside a policy or alone."""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.commands.policy import set_policy
from app.engine.commands.webhook_ops import delete_webhook, set_webhook, webhooks
from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.effects import ReplayError
from app.engine.errors import NoGroup, WrongArgument
from app.engine.snapshot import decode_snapshot, encode_snapshot, snapshot_view
from app.engine.store import Store
from tests.engine.helpers import T0, Journal, recovered, run

SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="


def hook(name: str = "h", stream: str = "s", group: str = "g", **kw: object) -> Webhook:
    return Webhook(stream, group, name, f"https://example.com/{name}", SECRET, **kw)  # type: ignore[arg-type]


def restored(store: Store, journal: Journal) -> list[Store]:
    """``helpers.recovered``, the webhooks checked too."""
    others = recovered(store, journal)
    for other in others:
        assert webhooks(other.keyspace) == webhooks(store.keyspace)
    return others


def test_set_replace_delete(store: Store, journal: Journal) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert store.run(set_webhook, hook("b")) is True
    assert store.run(set_webhook, hook("a", batch=5)) is True
    assert store.run(set_webhook, hook("a", paused=True, paused_reason="410 Gone")) is False
    assert [(h.name, h.paused, h.batch) for h in webhooks(store.keyspace, "s", "g")] == [
        ("a", True, 1),
        ("b", False, 1),
    ]
    restored(store, journal)
    assert store.run(delete_webhook, "s", "g", "b") is True
    assert store.run(delete_webhook, "s", "g", "b") is False
    assert [h.name for h in webhooks(store.keyspace)] == ["a"]
    for other in restored(store, journal):
        (only,) = webhooks(other.keyspace)
        assert only.paused_reason == "410 Gone"
        assert only.secret == SECRET


def test_a_missing_group_is_nogroup(store: Store) -> None:
    with pytest.raises(NoGroup):
        store.run(set_webhook, hook())
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with pytest.raises(NoGroup):
        store.run(set_webhook, hook(group="other"))
    with pytest.raises(NoGroup):
        store.run(delete_webhook, "s", "other", "h")
    assert webhooks(store.keyspace, "s", "other") == []
    assert webhooks(store.keyspace, "missing") == []


def test_they_go_with_their_group_or_stream(store: Store, journal: Journal) -> None:
    for key in ("s", "t"):
        run(store, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        run(store, "XGROUP", "CREATE", key, "g2", "$")
        store.run(set_webhook, hook(stream=key))
        store.run(set_webhook, hook(stream=key, group="g2"))
    run(store, "XGROUP", "DESTROY", "s", "g")
    assert [(h.stream, h.group) for h in webhooks(store.keyspace)] == [
        ("s", "g2"),
        ("t", "g"),
        ("t", "g2"),
    ]
    run(store, "XGROUP", "CREATE", "s", "g", "$")
    assert webhooks(store.keyspace, "s", "g") == []  # a new group of the same name has none
    run(store, "DEL", "t")
    assert [(h.stream, h.group) for h in webhooks(store.keyspace)] == [("s", "g2")]
    restored(store, journal)
    run(store, "RENAME", "s", "u")
    assert [(h.stream, h.group) for h in webhooks(store.keyspace)] == [("u", "g2")]
    restored(store, journal)
    run(store, "FLUSHALL")
    assert webhooks(store.keyspace) == []


def test_beside_a_policy_and_in_old_snapshots(store: Store, journal: Journal) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    run(store, "XGROUP", "CREATE", "s", "p", "$")
    store.run(set_policy, "s", "p", DeliveryPolicy(backoff_ms=(10,)))
    plain = encode_snapshot(snapshot_view(store.keyspace))  # a policy and no webhook
    store.run(set_webhook, hook())
    store.run(set_webhook, hook(group="p"))
    restored(store, journal)
    loaded = Store(clock=ManualClock(T0))
    decode_snapshot(plain, loaded.keyspace)
    assert webhooks(loaded.keyspace) == []
    assert loaded.keyspace.streams["s"].groups["p"].policy == DeliveryPolicy(backoff_ms=(10,))


def test_a_damaged_snapshot_webhook_stops_loading(store: Store) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    store.run(set_webhook, hook())
    data = encode_snapshot(snapshot_view(store.keyspace)).replace(b"https://", b"ftp://")
    with pytest.raises(ReplayError, match="webhook"):
        decode_snapshot(data, Store().keyspace)


def test_checks_are_the_webhook_type_s() -> None:
    with pytest.raises(WrongArgument, match="http"):
        Webhook("s", "g", "h", "ftp://x", SECRET)
    with pytest.raises(WrongArgument, match="secret"):
        Webhook("s", "g", "h", "https://x", "whsec_c2hvcnQ=")
    with pytest.raises(WrongArgument, match="batch"):
        hook(batch=0)
    assert SECRET not in repr(hook())
