"""The INFO fields only the running service knows: its process and its database.

The engine writes INFO's sections from what it holds (blocked clients, command counts, keys);
these sources add, per section, the fields of the process (``process_id``, ``tcp_port``,
resident memory, CPU time) and of durability (the journal's mode and backlog, whether the
keyspace is still loading), and, in ``stats``, the delivery policies' counters (the same
figures as /metrics: totals, then one line per policy group, at most ``metrics_max_groups``).
Read when INFO runs, never cached.
"""

from __future__ import annotations

import os
import resource
import sys

from app import __version__
from app.durability import Readiness, ReadyState
from app.engine.commands.policy import delivery_stats
from app.engine.keyspace import InfoFields, Keyspace
from app.settings import Settings
from app.storage import Storage


def _human(n: int) -> str:
    """Redis's ``bytesToHuman``: 1.50K, 2.00M ..."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n}B"


def _rss_bytes() -> int:
    """Resident set size now (Linux ``/proc/self/statm``), else the peak that getrusage gives."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return _peak_bytes()


def _peak_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def install(
    ks: Keyspace, settings: Settings, storage: Storage | None, readiness: Readiness
) -> None:
    def server() -> InfoFields:
        return [
            ("xstreams_version", __version__),
            ("process_id", os.getpid()),
            ("tcp_port", settings.port),
            ("python_version", sys.version.split()[0]),
        ]

    def memory() -> InfoFields:
        # A Python heap has no cheap exact size: the process's resident size stands for it.
        rss = _rss_bytes()
        peak = max(_peak_bytes(), rss)  # getrusage's peak is sampled; it is never below now
        return [
            ("used_memory", rss),
            ("used_memory_human", _human(rss)),
            ("used_memory_rss", rss),
            ("used_memory_rss_human", _human(rss)),
            ("used_memory_peak", peak),
            ("used_memory_peak_human", _human(peak)),
            ("maxmemory", 0),
        ]

    def persistence() -> InfoFields:
        fields: InfoFields = [("loading", int(readiness.state is not ReadyState.READY))]
        if storage is None:
            return [*fields, ("aof_enabled", 0)]
        failure = storage.writer.failure
        return [
            *fields,
            ("aof_enabled", 1),  # the journal of effects plays the AOF's part
            ("xstreams_fsync", storage.mode.value),
            ("xstreams_journal_bytes_since_snapshot", storage.writer.bytes_since_snapshot),
            ("xstreams_journal_records_since_snapshot", storage.writer.records_since_snapshot),
            ("xstreams_snapshots_taken", storage.snapshots.taken if storage.snapshots else 0),
            ("xstreams_storage", "ok" if failure is None else "unavailable"),
        ]

    def cpu() -> InfoFields:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return [
            ("used_cpu_sys", f"{usage.ru_stime:.6f}"),
            ("used_cpu_user", f"{usage.ru_utime:.6f}"),
        ]

    def stats() -> InfoFields:
        groups = sorted(delivery_stats(ks), key=lambda s: (s.stream, s.group))
        lengths = {s.dead_letter_stream: s.dead_letter_length or 0 for s in groups}
        lengths.pop(None, None)
        fields: InfoFields = [
            ("xstreams_policy_groups", len(groups)),
            ("xstreams_redelivered", sum(s.redelivered for s in groups)),
            ("xstreams_dead_lettered", sum(s.dead_lettered for s in groups)),
            ("xstreams_dead_letter_entries", sum(lengths.values())),
        ]
        for i, s in enumerate(groups[: settings.metrics_max_groups]):
            line = (
                f"stream={s.stream},group={s.group},redelivered={s.redelivered},"
                f"dead_lettered={s.dead_lettered},dead_letter_stream={s.dead_letter_stream or ''},"
                f"dead_letter_length={s.dead_letter_length or 0}"
            )
            fields.append((f"xstreams_policy_group{i}", line))
        return fields

    ks.info.update(server=server, memory=memory, persistence=persistence, cpu=cpu, stats=stats)
