"""The service's Prometheus metrics: what is tallied on the request path, what is read at
scrape time, and their names (docs/operations/metrics.md lists them).

Two kinds of figures, kept apart so the request path stays cheap:

- events, tallied as they happen (``tallies``: a dict lookup and an addition, on the loop):
  requests and their latency per route, commands and their latency, errors by kind, journal
  commits (latency, records per group commit), event streams that ended and why;
- state, read only when ``/metrics`` is scraped (``ServiceCollector``): streams, entries, the
  modelled node bytes, consumer groups, blocked clients, open event streams, the journal's
  backlog. Nothing is updated per request for them.

Cardinality is bounded by construction: routes are path templates, commands come from the
command table (an unknown name counts as ``unknown``), an error's kind is its Redis code.
Per-group series (pending, lag) exist only for streams matching the opt-in globs
(``XSTREAMS_METRICS_GROUP_STREAMS``), at most ``metrics_max_groups`` of them; so do the
per-webhook series (at most ``metrics_max_groups`` webhooks), beside totals always shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from app import __version__
from app.engine.delivery import DeliveryStats, Webhook
from app.engine.glob import glob_match
from app.engine.keyspace import Keyspace
from app.observe.delivery_families import delivery_families, webhook_families
from app.observe.tallies import Counts, Histogram, Timings

__all__ = ["CONTENT_TYPE", "FairFigures", "JournalFigures", "Metrics", "SseFigures", "error_kind"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Records per group commit: 1 (a lone writer) to thousands (a burst of pipelines).
GROUP_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 5000.0)
_CODE = re.compile(r"[A-Z]{2,24}")


def error_kind(text: str) -> str:
    """An error's kind: its Redis code (``NOGROUP``, ``BUSYGROUP``, ``NOPERM``, ``ERR``)."""
    code = text.split(" ", 1)[0]
    return code if _CODE.fullmatch(code) else "ERR"


@dataclass(frozen=True, slots=True)
class SseFigures:
    open: int
    closed: Mapping[str, int]  # by close reason
    fell_behind: int  # times a live subscriber's buffer was full (it reads from its cursor)


@dataclass(frozen=True, slots=True)
class FairFigures:
    slots: int  # requests admitted per turn of the event loop (fair_slots)
    queued: int  # requests waiting for their credential's turn


@dataclass(frozen=True, slots=True)
class JournalFigures:
    uncommitted: int  # records appended, not committed yet
    available: bool  # the database takes commits


@dataclass(slots=True)
class Metrics:
    """Everything ``/metrics`` shows for one app; ``main`` points it at its sources."""

    group_streams: Sequence[str] = ()
    max_groups: int = 1000
    # (method, route, status): one tally per request gives both the requests by status and
    # the latency by route (summed over statuses at scrape time).
    http: Timings = field(default_factory=Timings)
    commands: Counts = field(default_factory=Counts)  # (command,)
    command_duration: Timings = field(default_factory=Timings)  # (command,)
    errors: Counts = field(default_factory=Counts)  # (kind,)
    journal_commit: Timings = field(default_factory=Timings)  # ()
    journal_group: Timings = field(default_factory=lambda: Timings(GROUP_BUCKETS))  # ()
    idempotency: Counts = field(default_factory=Counts)  # (outcome,)
    # Requests refused past their credential's rate (app/api/rates.py), by credential: at
    # most ``max_groups`` credentials get a series, the rest count as "other".
    throttled: Counts = field(default_factory=Counts)  # (credential, limit)
    # Admission by turns (app/api/fairness.py): how long queued requests waited for a slot,
    # requests refused past their credential's queue, and the slots and queue now.
    fair_wait: Timings = field(default_factory=Timings)  # ()
    fair_refused: Counts = field(default_factory=Counts)  # ()
    fair: Callable[[], FairFigures] | None = None
    # Retention (app/delivery): entries the background sweeps trimmed, and steps that failed.
    retention_trimmed_entries: int = 0
    retention_failures: int = 0
    # Webhooks (app/delivery/hook.py): by (stream, group, webhook, outcome), latency by
    # (stream, group, webhook), requests in flight by (stream, group, webhook).
    webhook_deliveries: Counts = field(default_factory=Counts)
    webhook_latency: Timings = field(default_factory=Timings)
    webhook_requests: dict[tuple[str, str, str], int] = field(default_factory=dict)
    keyspace: Keyspace | None = None
    sse: Callable[[], SseFigures] | None = None
    journal: Callable[[], JournalFigures] | None = None
    registry: CollectorRegistry = field(init=False)
    # The delivery policies' counters of the scrape under way (``exposition``'s argument).
    delivery: Sequence[DeliveryStats] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(ServiceCollector(self))
        # The process's own figures (resident memory, CPU, open files) and the runtime's.
        for default in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(default)

    def error(self, text: str) -> None:
        self.errors.add((error_kind(text),))

    def command(self, name: str, seconds: float) -> None:
        self.commands.add((name,))
        self.command_duration.observe((name,), seconds)

    def command_run(self, name: str, n: int, seconds: float) -> None:
        self.commands.add((name,), n)
        self.command_duration.observe((name,), seconds, n)

    def counted(self, name: str) -> None:
        """A command run inside a transaction, which is timed whole (as ``exec``)."""
        self.commands.add((name,))

    def idempotent(self, outcome: str) -> None:
        """A request with an Idempotency-Key: ``kept``, ``replayed``, ``reused`` (another
        request's key: 422) or ``running`` (409)."""
        self.idempotency.add((outcome,))

    def throttle(self, credential: str, limit: str = "requests") -> None:
        """A request refused past ``credential``'s rate (``kind:name``: ``key:app``,
        ``jwt:alice``, ``token:admin``, ``open:open``) for ``limit`` (requests, bytes or
        entries). The cap is on credentials: each keeps its three series."""
        seen = {labels[0] for labels in self.throttled.by_labels}
        if credential not in seen and len(seen - {"other"}) >= self.max_groups:
            credential = "other"
        self.throttled.add((credential, limit))

    def retention_trimmed(self, entries: int) -> None:
        self.retention_trimmed_entries += entries

    def retention_failed(self) -> None:
        self.retention_failures += 1

    def webhook_delivered(self, hook: Webhook, outcome: str, seconds: float) -> None:
        """One webhook request ended: ok, failed, timeout, refused or gone (410)."""
        self.webhook_deliveries.add((hook.stream, hook.group, hook.name, outcome))
        self.webhook_latency.observe((hook.stream, hook.group, hook.name), seconds)

    def webhook_in_flight(self, hook: Webhook, delta: int) -> None:
        key = (hook.stream, hook.group, hook.name)
        n = self.webhook_requests.get(key, 0) + delta
        if n:
            self.webhook_requests[key] = n
        else:
            self.webhook_requests.pop(key, None)

    def journal_committed(self, seconds: float, records: int) -> None:
        self.journal_commit.observe((), seconds)
        self.journal_group.observe((), float(records))

    def exposition(self, delivery: Sequence[DeliveryStats] | None = None) -> bytes:
        """The text format a Prometheus server scrapes; ``delivery``: the backend's
        ``delivery_stats`` read for this scrape (None: not available, left out)."""
        self.delivery = delivery
        try:
            return generate_latest(self.registry)
        finally:
            self.delivery = None


class ServiceCollector(Collector):
    """Reads the tallies and the live state into metric families, at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.m
        info = GaugeMetricFamily("xstreams_build_info", "The running version.", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        requests = CounterMetricFamily(
            "xstreams_http_requests",
            "HTTP requests answered, by method, route (path template) and status.",
            labels=["method", "route", "status"],
        )
        by_route: dict[tuple[str, ...], Histogram] = {}
        for labels, h in m.http:
            requests.add_metric(list(labels), h.count)
            merged = by_route.get(labels[:2])
            if merged is None:
                by_route[labels[:2]] = Histogram(list(h.counts), h.total)
            else:
                merged.counts = [a + b for a, b in zip(merged.counts, h.counts, strict=True)]
                merged.total += h.total
        yield requests
        latency = HistogramMetricFamily(
            "xstreams_http_request_duration_seconds",
            "Time from a request's arrival to the end of its response (long polls and event"
            " streams included), by method and route.",
            labels=["method", "route"],
        )
        for labels, h in by_route.items():
            latency.add_metric(list(labels), h.cumulative(m.http.bounds), h.total)
        yield latency
        yield _counter(
            "xstreams_commands",
            "Commands run through the command endpoint (each one of a pipeline or a"
            " transaction), by command.",
            ["command"],
            m.commands,
        )
        yield _histogram(
            "xstreams_command_duration_seconds",
            "Time the engine took to run a command (a blocked read's wait excluded); a"
            " transaction is timed whole as `exec`.",
            ["command"],
            m.command_duration,
        )
        yield _counter(
            "xstreams_errors",
            "Errors answered to commands and REST or SSE operations, by Redis error code.",
            ["kind"],
            m.errors,
        )
        yield _histogram(
            "xstreams_journal_commit_duration_seconds",
            "Time of one group commit of journal records.",
            [],
            m.journal_commit,
        )
        yield _histogram(
            "xstreams_journal_commit_records",
            "Journal records per group commit.",
            [],
            m.journal_group,
        )
        if m.journal is not None:
            j = m.journal()
            yield GaugeMetricFamily(
                "xstreams_journal_uncommitted_records",
                "Journal records appended and not committed yet.",
                value=j.uncommitted,
            )
            yield GaugeMetricFamily(
                "xstreams_storage_available",
                "1 while the database takes commits, 0 while writes are refused.",
                value=1 if j.available else 0,
            )
        if m.sse is not None:
            s = m.sse()
            yield GaugeMetricFamily(
                "xstreams_sse_subscribers", "Event streams open now.", value=s.open
            )
            closed = CounterMetricFamily(
                "xstreams_sse_closed",
                "Event streams ended, by reason (`stalled`: a slow client cut off).",
                labels=["reason"],
            )
            for reason, n in sorted(s.closed.items()):
                closed.add_metric([reason], n)
            yield closed
            yield CounterMetricFamily(
                "xstreams_sse_fell_behind",
                "Times a live subscriber's buffer was full, so it went on reading from its own"
                " position (a slow one).",
                value=s.fell_behind,
            )
        yield _counter(
            "xstreams_idempotent_requests",
            "Requests with an Idempotency-Key, by outcome: kept (ran, response stored),"
            " replayed, reused (422: another request's key), running (409).",
            ["outcome"],
            m.idempotency,
        )
        yield CounterMetricFamily(
            "xstreams_retention_trimmed",
            "Entries the background retention removed (XTRIM steps, app/delivery).",
            value=m.retention_trimmed_entries,
        )
        yield _counter(
            "xstreams_throttled_requests",
            "Requests refused with 429 past their credential's rate, by credential (kind:name;"
            " past metrics_max_groups credentials, 'other') and limit (requests, bytes,"
            " entries).",
            ["credential", "limit"],
            m.throttled,
        )
        if m.fair is not None:
            yield from _fair_families(m.fair(), m)
        yield CounterMetricFamily(
            "xstreams_retention_failures",
            "Retention steps (or listings of the streams to trim) that failed; retried at the"
            " next sweep.",
            value=m.retention_failures,
        )
        yield from webhook_families(m)
        if m.delivery is not None:
            yield from delivery_families(m, m.delivery)
        if m.keyspace is not None:
            yield from _keyspace(m, m.keyspace)
            yield from _responses(m.keyspace)


def _keyspace(m: Metrics, ks: Keyspace) -> Iterator[Metric]:
    """Streams, entries, node bytes, groups, IDMP producers, blocked clients: one pass over
    the keyspace."""
    entries = node_bytes = groups = producers = iids = evicted = 0
    for stream in ks.streams.values():
        entries += stream.length
        groups += len(stream.groups)
        for node in stream.nodes:
            node_bytes += node.lp_bytes
        idmp = stream.idmp
        if idmp is not None:
            producers += len(idmp.producers)
            iids += idmp.iids
            evicted += idmp.pids_evicted
    yield GaugeMetricFamily("xstreams_streams", "Streams (keys).", value=len(ks.streams))
    yield GaugeMetricFamily("xstreams_stream_entries", "Entries in all streams.", value=entries)
    yield GaugeMetricFamily(
        "xstreams_stream_node_bytes",
        "Bytes the entries take as Redis's listpack nodes would (the engine's model of them).",
        value=node_bytes,
    )
    yield GaugeMetricFamily("xstreams_consumer_groups", "Consumer groups.", value=groups)
    yield GaugeMetricFamily(
        "xstreams_idmp_producers",
        "Producers of idempotent appends (XADD IDMP) held, over all streams (an expired one"
        " goes at its stream's next IDMP append).",
        value=producers,
    )
    yield GaugeMetricFamily(
        "xstreams_idmp_iids", "Idempotent IDs (XADD IDMP) held, over all streams.", value=iids
    )
    yield GaugeMetricFamily(
        "xstreams_idmp_producers_evicted",
        "Producers forgotten past XSTREAMS_IDMP_MAX_PRODUCERS, over the streams there are now"
        " (the sum of their pids-evicted).",
        value=evicted,
    )
    yield GaugeMetricFamily(
        "xstreams_blocked_clients",
        "Clients blocked in XREAD / XREADGROUP BLOCK (long polls included).",
        value=ks.blocked.count(),
    )
    if not m.group_streams:
        return
    pending = GaugeMetricFamily(
        "xstreams_group_pending",
        "Entries delivered to a group and not acknowledged (its PEL), for streams matching"
        " XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group"],
    )
    lag = GaugeMetricFamily(
        "xstreams_group_lag",
        "Entries not yet delivered to a group (XINFO GROUPS lag; absent when Redis cannot"
        " tell), for streams matching XSTREAMS_METRICS_GROUP_STREAMS.",
        labels=["stream", "group"],
    )
    shown = omitted = 0
    for key in sorted(ks.streams):
        if not any(glob_match(pattern, key) for pattern in m.group_streams):
            continue
        stream = ks.streams[key]
        for name in sorted(stream.groups):
            if shown >= m.max_groups:
                omitted += 1
                continue
            shown += 1
            group = stream.groups[name]
            pending.add_metric([key, name], len(group.pel))
            group_lag = group.lag(stream)
            if group_lag is not None:
                lag.add_metric([key, name], group_lag)
    yield pending
    yield lag
    yield GaugeMetricFamily(
        "xstreams_metrics_groups_omitted",
        "Groups of matching streams left out past XSTREAMS_METRICS_MAX_GROUPS.",
        value=omitted,
    )


def _responses(ks: Keyspace) -> Iterator[Metric]:
    """The responses kept for Idempotency-Key (embedded backend; Redis keeps its own)."""
    r = ks.responses
    yield GaugeMetricFamily(
        "xstreams_idempotency_keys", "Responses kept for Idempotency-Key now.", value=len(r.entries)
    )
    yield GaugeMetricFamily(
        "xstreams_idempotency_bytes",
        "Bytes the kept responses take (their keys, fingerprints and bodies, and a fixed"
        " overhead each).",
        value=r.used_bytes,
    )
    yield CounterMetricFamily(
        "xstreams_idempotency_expired",
        "Kept responses dropped at the end of their window.",
        value=r.expired,
    )
    yield CounterMetricFamily(
        "xstreams_idempotency_evicted",
        "Kept responses dropped before their window ended, to stay within the budget"
        " (XSTREAMS_IDEMPOTENCY_MAX_KEYS, XSTREAMS_IDEMPOTENCY_MAX_BYTES).",
        value=r.evicted,
    )


def _fair_families(f: FairFigures, m: Metrics) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "xstreams_fair_slots",
        "Requests admitted per turn of the event loop before credentials take turns (fair_slots).",
        value=f.slots,
    )
    yield GaugeMetricFamily(
        "xstreams_fair_queued_requests",
        "Requests waiting for their credential's turn (all credentials).",
        value=f.queued,
    )
    yield _histogram(
        "xstreams_fair_wait_seconds",
        "Time a request that found the loop turn full waited for its credential's turn.",
        [],
        m.fair_wait,
    )
    yield _counter(
        "xstreams_fair_refused_requests",
        "Requests refused with 429 because their credential's queue was full (fair_queue_per_key).",
        [],
        m.fair_refused,
    )


def _counter(name: str, doc: str, labels: list[str], counts: Counts) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, n in counts:
        family.add_metric(list(values), n)
    return family


def _histogram(name: str, doc: str, labels: list[str], timings: Timings) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, h in timings:
        family.add_metric(list(values), h.cumulative(timings.bounds), h.total)
    return family
