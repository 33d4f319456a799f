"""The report's chart: entries per bucket over time, and the inter-arrival percentiles.

Drawn on a bare ``Figure`` rendered by the Agg canvas, never through ``pyplot``: no global
backend is chosen, no window can open, and nothing is left in pyplot's figure registry when
the report runs inside a longer-lived process (a notebook, the tests).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from app.pipeline.report_model import ReportTables


def draw_chart(tables: ReportTables, path: Path) -> Path:
    """Two panels: a step line per stream (entries per bucket), and grouped bars of its gaps.

    Steps rather than a smooth line: a count belongs to the whole bucket, not to its start.
    Dots mark the buckets that hold entries, so a single busy bucket is still visible.
    The gap axis is logarithmic when gaps span more than two orders of magnitude, which is
    common (bursts of 1 ms beside idle hours).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(10, 8), layout="constrained")
    FigureCanvasAgg(figure)
    traffic, gaps = figure.subplots(2, 1, height_ratios=(3, 2))

    streams = sorted({row["stream"] for row in tables.entries_per_bucket})
    for stream in streams:
        counts = {
            r["bucket_start"]: r["entries"]
            for r in tables.entries_per_bucket
            if r["stream"] == stream
        }
        starts, entries = _steps(counts, timedelta(milliseconds=tables.bucket.width_ms))
        traffic.step(starts, entries, where="post", label=stream)
        traffic.plot(list(counts), list(counts.values()), "o", markersize=3, color="0.3")
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    traffic.xaxis.set_major_locator(locator)
    traffic.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    traffic.set_title(f"Entries per {tables.bucket.value} (UTC)")
    traffic.set_ylabel("entries")
    traffic.set_ylim(bottom=0)
    traffic.yaxis.set_major_locator(MaxNLocator(integer=True))
    traffic.grid(alpha=0.3)
    if streams:
        traffic.legend(loc="upper left", fontsize="small")

    rows = tables.inter_arrival
    series: dict[str, list[float | int | None]] = {
        "p50": [r["p50_ms"] for r in rows],
        "p90": [r["p90_ms"] for r in rows],
        "p99": [r["p99_ms"] for r in rows],
        "max": [r["max_ms"] for r in rows],
    }
    width = 0.8 / len(series)
    positive: list[float] = []
    for i, (label, column) in enumerate(series.items()):
        values = [float(v or 0) for v in column]
        positive.extend(v for v in values if v > 0)
        gaps.bar([x + (i - 1.5) * width for x in range(len(rows))], values, width, label=label)
    gaps.set_xticks(range(len(rows)), [r["stream"] for r in rows])
    gaps.set_title("Inter-arrival gaps (ms); no bar: a single entry")
    gaps.set_ylabel("ms")
    if positive and max(positive) > 100 * min(positive):
        gaps.set_yscale("log")
    gaps.grid(axis="y", alpha=0.3)
    gaps.legend(loc="upper left", fontsize="small")

    figure.savefig(path, dpi=100)
    return path


# Filling empty buckets with zeros costs one point per bucket; past this, the line just joins
# the buckets that hold entries (the dots still show where they are).
_MAX_FILLED_BUCKETS = 50_000


def _steps(counts: dict[datetime, int], width: timedelta) -> tuple[list[datetime], list[int]]:
    """Points for a post-step line: empty buckets drop to zero rather than being bridged, and
    the last bucket gets its full width."""
    starts = sorted(counts)
    first, last = starts[0], starts[-1]
    if (last - first) / width <= _MAX_FILLED_BUCKETS:
        starts = [first + i * width for i in range(int((last - first) / width) + 1)]
    return [*starts, last + width], [counts.get(s, 0) for s in starts] + [counts[last]]
