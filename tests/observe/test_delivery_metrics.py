"""The delivery policies' series in /metrics (app/observe/metrics.py ``_delivery``): totals
always; per group and per dead-letter stream only for streams matching the opt-in globs, at
most ``max_groups`` groups, as the other per-group series."""

from __future__ import annotations

from app.engine.delivery import DeliveryStats
from app.observe import Metrics
from tests.observe.support import labels_of, parse, value

STATS = [
    DeliveryStats("orders", "billing", 3, 1, "orders:dead", 1),
    DeliveryStats("orders", "audit", 2, 4, "orders:dead", 1),  # the same dead-letter stream
    DeliveryStats("orders-eu", "billing", 5, 0, None, None),
    DeliveryStats("payments", "g", 7, 2, "payments:dead", 2),
]


def test_totals_are_always_there_and_per_group_series_only_when_asked_for() -> None:
    samples = parse(Metrics().exposition(STATS).decode())
    assert value(samples, "xstreams_redelivered_total") == 17
    assert value(samples, "xstreams_dead_lettered_total") == 7
    assert value(samples, "xstreams_dead_letter_entries") == 3  # orders:dead counted once
    assert not labels_of(samples, "xstreams_group_redelivered_total", "group")


def test_per_group_series_for_matching_streams_within_the_cap() -> None:
    m = Metrics(group_streams=["orders*"], max_groups=2)
    samples = parse(m.exposition(STATS).decode())
    # Name order: (orders, audit), (orders, billing); (orders-eu, billing) is past the cap.
    assert value(samples, "xstreams_group_redelivered_total", stream="orders", group="audit") == 2
    assert (
        value(samples, "xstreams_group_dead_lettered_total", stream="orders", group="billing") == 1
    )
    assert labels_of(samples, "xstreams_group_redelivered_total", "stream") == {"orders"}
    assert value(samples, "xstreams_metrics_policy_groups_omitted") == 1
    assert labels_of(samples, "xstreams_dead_letter_stream_length", "stream") == {"orders:dead"}
    assert value(samples, "xstreams_dead_letter_stream_length", stream="orders:dead") == 1


def test_a_scrape_without_the_backends_figures_leaves_them_out() -> None:
    samples = parse(Metrics().exposition(None).decode())
    assert not any(name == "xstreams_redelivered_total" for name, _ in samples)
    assert value(samples, "xstreams_retention_trimmed_total") == 0
