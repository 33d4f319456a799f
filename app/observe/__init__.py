"""What an operator sees of a running service: Prometheus metrics, request IDs, log lines.

    tallies     counts and histograms kept on the request path (cheap, on the event loop)
    metrics     Metrics: what ``/metrics`` shows, tallied or read at scrape time; their names
    delivery_families  the delivery policies' and webhooks' families, opt-in per group
    logs        text or JSON log lines, the request ID of the line's request
    middleware  Observe: each request's ID, count, latency and access line

A layer of its own beside ``app.access``: it reads the engine's keyspace at scrape time and
knows neither the API nor storage, which both report to it (``app.main`` wires them).
"""

from app.observe.logs import REQUEST_ID, LogFormat, configure_logging
from app.observe.metrics import CONTENT_TYPE, JournalFigures, Metrics, SseFigures, error_kind
from app.observe.middleware import Observe

__all__ = [
    "CONTENT_TYPE",
    "REQUEST_ID",
    "JournalFigures",
    "LogFormat",
    "Metrics",
    "Observe",
    "SseFigures",
    "configure_logging",
    "error_kind",
]
