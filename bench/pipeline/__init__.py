"""The Spark pipeline benchmark, ``python -m bench.pipeline`` (its command line and the full
description are in ``__main__``). The names the smoke test and callers use are re-exported
here from the modules that hold them."""

from __future__ import annotations

from bench.pipeline.archive_timing import archive_run, phase_timer
from bench.pipeline.data import (
    REDIS_DB,
    SPAN_DAYS,
    STREAM,
    TRIM_STREAM,
    cutoff_above,
    entry_fields,
    entry_id,
    load_redis,
    load_xstreams,
    log_stderr,
)
from bench.pipeline.meter import Cell, Meter, Sample, repeat, timed
from bench.pipeline.reads import halves, http_read, redis_read, spark_count, spark_full_read
from bench.pipeline.runner import Plan, run
from bench.pipeline.tables import MARK_END, MARK_START, markdown, update_report

__all__ = [
    "MARK_END",
    "MARK_START",
    "REDIS_DB",
    "SPAN_DAYS",
    "STREAM",
    "TRIM_STREAM",
    "Cell",
    "Meter",
    "Plan",
    "Sample",
    "archive_run",
    "cutoff_above",
    "entry_fields",
    "entry_id",
    "halves",
    "http_read",
    "load_redis",
    "load_xstreams",
    "log_stderr",
    "markdown",
    "phase_timer",
    "redis_read",
    "repeat",
    "run",
    "spark_count",
    "spark_full_read",
    "timed",
    "update_report",
]
