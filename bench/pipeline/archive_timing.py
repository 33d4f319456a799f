"""The archive job timed: one ``archive`` of the whole stream with its wall time, entries/s,
CPU and phases (read+count, write, verify, manifest+publish, trim)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.pipeline.data import cutoff_above
from bench.pipeline.meter import Meter


@contextmanager
def phase_timer(events: list[tuple[float, str]]) -> Iterator[None]:
    """Times the archive's verify and trim steps by wrapping the module's functions for the
    duration of one run (the archive logs only after the count and the commit)."""
    from app.pipeline import archive as job

    originals = {name: getattr(job, name) for name in ("_verify", "_trim")}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_step(*args: Any, **kwargs: Any) -> Any:
            events.append((time.monotonic(), f"{name} start"))
            try:
                return fn(*args, **kwargs)
            finally:
                events.append((time.monotonic(), f"{name} end"))

        return timed_step

    for name, fn in originals.items():
        setattr(job, name, wrap(name, fn))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(job, name, fn)


def archive_run(
    spark: Any,
    url: str,
    stream: str,
    n: int,
    out: Path,
    meter: Meter,
    *,
    trim: bool,
    partitions: int = 4,
    page_size: int = 5000,
    label: str = "",
) -> dict[str, Any]:
    """One ``archive`` of the whole stream, with wall time, entries/s and its phases."""
    from app.pipeline.archive import archive

    events: list[tuple[float, str]] = []

    def log(message: str) -> None:
        events.append((time.monotonic(), message))

    figures: list[float] = []
    with phase_timer(events), meter.measure(figures):
        t0 = time.monotonic()
        result = archive(spark, url, stream, cutoff_above(n), str(out), trim=trim,
                         partitions=partitions, page_size=page_size, log=log)  # fmt: skip
        t1 = time.monotonic()
    wall, server, client, machine = figures

    def at(prefix: str) -> float:
        return next(t for t, m in events if m.startswith(prefix))

    phases = {"read+count": at("read ") - t0}
    phases["write"] = at("_verify start") - at("read ")
    phases["verify"] = at("_verify end") - at("_verify start")
    phases["manifest+publish"] = (at("_trim start") if trim else t1) - at("_verify end")
    if trim:
        phases["trim"] = at("_trim end") - at("_trim start")
    files = sorted(p.relative_to(out).parts[1] for p in out.glob("stream=*/date=*"))
    return {
        "label": label or f"archive trim={trim}",
        "trim": trim,
        "rows": result.rows,
        "trimmed": result.trimmed,
        "seconds": round(wall, 3),
        "rate": round(result.rows / wall, 1),
        "phases_s": {k: round(v, 3) for k, v in phases.items()},
        "date_partitions": files,
        "partitions": partitions,
        "page_size": page_size,
        "server_cores": round(server, 2),
        "client_cores": round(client, 2),
        "machine_cores": round(machine, 2),
    }
