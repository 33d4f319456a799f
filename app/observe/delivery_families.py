"""The delivery policies' and the webhooks' metric families, built at scrape time.

Their per-group and per-webhook series are opt-in and bounded (``group_streams``,
``max_groups``); totals are always shown. ``Shown`` is what these builders read of
``Metrics``, so they need not know the rest of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from app.engine.delivery import DeliveryStats
from app.engine.glob import glob_match
from app.observe.tallies import Counts, Histogram, Timings


class Shown(Protocol):
    """What the families read of ``Metrics``: which streams get per-group series, how many,
    and the webhooks' tallies."""

    group_streams: Sequence[str]
    max_groups: int
    webhook_deliveries: Counts
    webhook_latency: Timings
    webhook_requests: dict[tuple[str, str, str], int]


def delivery_families(m: Shown, stats: Sequence[DeliveryStats]) -> Iterator[Metric]:
    """Delivery policies (issue 27): totals over every policy group, always; per group and
    per dead-letter stream only for streams matching XSTREAMS_METRICS_GROUP_STREAMS, at most
    ``metrics_max_groups`` groups, as the other per-group series."""
    yield CounterMetricFamily(
        "xstreams_redelivered",
        "Entries delivered again by a group's delivery policy (claimed past the visibility"
        " timeout or after XNACK), over every group with a policy.",
        value=sum(s.redelivered for s in stats),
    )
    yield CounterMetricFamily(
        "xstreams_dead_lettered",
        "Entries moved to a dead-letter stream by a group's delivery policy, over every group.",
        value=sum(s.dead_lettered for s in stats),
    )
    lengths = {s.dead_letter_stream: s.dead_letter_length for s in stats if s.dead_letter_stream}
    yield GaugeMetricFamily(
        "xstreams_dead_letter_entries",
        "Entries in the dead-letter streams the delivery policies name, together.",
        value=sum(n or 0 for n in lengths.values()),
    )
    if not m.group_streams:
        return
    redelivered = CounterMetricFamily(
        "xstreams_group_redelivered",
        "Entries a group's delivery policy delivered again, for streams matching"
        " XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group"],
    )
    dead = CounterMetricFamily(
        "xstreams_group_dead_lettered",
        "Entries a group's delivery policy moved to its dead-letter stream, for streams"
        " matching XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group"],
    )
    length = GaugeMetricFamily(
        "xstreams_dead_letter_stream_length",
        "Entries in a dead-letter stream (XLEN), named by a policy of a group of a stream"
        " matching XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream"],
    )
    shown = omitted = 0
    seen: set[str] = set()
    for s in sorted(stats, key=lambda s: (s.stream, s.group)):
        if not any(glob_match(pattern, s.stream) for pattern in m.group_streams):
            continue
        if shown >= m.max_groups:
            omitted += 1
            continue
        shown += 1
        redelivered.add_metric([s.stream, s.group], s.redelivered)
        dead.add_metric([s.stream, s.group], s.dead_lettered)
        dls = s.dead_letter_stream
        if dls is not None and s.dead_letter_length is not None and dls not in seen:
            seen.add(dls)
            length.add_metric([dls], s.dead_letter_length)
    yield redelivered
    yield dead
    yield length
    yield GaugeMetricFamily(
        "xstreams_metrics_policy_groups_omitted",
        "Policy groups of matching streams left out past XSTREAMS_METRICS_MAX_GROUPS.",
        value=omitted,
    )


def webhook_families(m: Shown) -> Iterator[Metric]:
    """Webhook deliveries (issue 28): totals by outcome, latency and requests in flight over
    every webhook, always; per webhook only for streams matching
    XSTREAMS_METRICS_GROUP_STREAMS, at most ``metrics_max_groups`` webhooks."""
    outcomes: dict[str, int] = {}
    for labels, n in m.webhook_deliveries:
        outcomes[labels[3]] = outcomes.get(labels[3], 0) + n
    total = CounterMetricFamily(
        "xstreams_webhook_deliveries",
        "Webhook requests ended, by outcome: ok (2xx, acknowledged), failed (another status or"
        " no connection), timeout, refused (outbound rules), gone (410: paused).",
        labels=["outcome"],
    )
    for outcome in sorted(outcomes):
        total.add_metric([outcome], outcomes[outcome])
    yield total
    merged: Histogram | None = None
    for _, h in m.webhook_latency:
        if merged is None:
            merged = Histogram(list(h.counts), h.total)
        else:
            merged.counts = [a + b for a, b in zip(merged.counts, h.counts, strict=True)]
            merged.total += h.total
    latency = HistogramMetricFamily(
        "xstreams_webhook_duration_seconds",
        "Time from a webhook request's start to its answer's status (or its failure).",
        labels=[],
    )
    if merged is not None:
        latency.add_metric([], merged.cumulative(m.webhook_latency.bounds), merged.total)
    yield latency
    yield GaugeMetricFamily(
        "xstreams_webhook_in_flight",
        "Webhook requests in flight now.",
        value=sum(m.webhook_requests.values()),
    )
    if not m.group_streams:
        return
    hooks = sorted(
        {labels[:3] for labels, _ in m.webhook_deliveries} | set(m.webhook_requests),
    )
    shown: set[tuple[str, ...]] = set()
    omitted = 0
    for key in hooks:
        if not any(glob_match(pattern, key[0]) for pattern in m.group_streams):
            continue
        if len(shown) >= m.max_groups:
            omitted += 1
            continue
        shown.add(key)
    by_hook = CounterMetricFamily(
        "xstreams_webhook_group_deliveries",
        "Webhook requests ended, by webhook and outcome, for streams matching"
        " XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group", "webhook", "outcome"],
    )
    for labels, n in m.webhook_deliveries:
        if labels[:3] in shown:
            by_hook.add_metric(list(labels), n)
    yield by_hook
    hook_latency = HistogramMetricFamily(
        "xstreams_webhook_group_duration_seconds",
        "Webhook request time, by webhook, for streams matching XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group", "webhook"],
    )
    for labels, h in m.webhook_latency:
        if labels in shown:
            hook_latency.add_metric(list(labels), h.cumulative(m.webhook_latency.bounds), h.total)
    yield hook_latency
    in_flight = GaugeMetricFamily(
        "xstreams_webhook_group_in_flight",
        "Webhook requests in flight now, by webhook, for streams matching"
        " XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group", "webhook"],
    )
    for key, n in m.webhook_requests.items():
        if key in shown:
            in_flight.add_metric(list(key), n)
    yield in_flight
    yield GaugeMetricFamily(
        "xstreams_metrics_webhooks_omitted",
        "Webhooks of matching streams left out past XSTREAMS_METRICS_MAX_GROUPS.",
        value=omitted,
    )
