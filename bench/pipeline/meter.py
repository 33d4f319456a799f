"""CPU accounting from /proc around every timed run: the server process, this process tree
and the whole machine (``Meter``), one run's figures (``Sample``) and a measured configuration
summarised by its median (``Cell``, ``repeat``)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.pipeline.data import log_stderr

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def proc_cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of a live process (plus its reaped children's, if asked)."""
    f = _stat_fields(pid)
    ticks = int(f[11]) + int(f[12])
    if children:
        ticks += int(f[13]) + int(f[14])
    return ticks / TICKS


def _descendants(root: int, exclude: set[int]) -> list[int]:
    """Live descendants of ``root`` from /proc, without the ``exclude`` subtrees (the server)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent[int(entry)] = int(_stat_fields(int(entry))[1])
            except (OSError, IndexError, ValueError):
                continue
    found: list[int] = []
    frontier = [root]
    while frontier:
        p = frontier.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in exclude:
                found.append(child)
                frontier.append(child)
    return found


def tree_cpu_seconds(exclude: set[int]) -> dict[int, float]:
    """CPU of this process and every live descendant (Spark's JVM, its Python workers, anchor
    readers) by pid, each with its reaped children, so a Python worker that exits still counts
    (in its daemon's figure)."""
    cpu = {os.getpid(): proc_cpu_seconds(os.getpid())}
    for pid in _descendants(os.getpid(), exclude):
        try:
            cpu[pid] = proc_cpu_seconds(pid, children=True)
        except OSError:
            continue
    return cpu


def tree_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots by the processes alive at the second one (new ones
    count from zero); a process that exited meanwhile without being reaped by one of them
    (e.g. an idle Spark daemon) drops out instead of subtracting its whole lifetime."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def machine_busy_seconds() -> float:
    """Non-idle CPU seconds of the whole machine (every core), from /proc/stat: includes
    whatever the other developer runs meanwhile."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICKS


@dataclass
class Sample:
    """One timed run: wall seconds, rows seen, and cores used meanwhile by each party."""

    seconds: float
    rows: int
    rate: float
    server_cores: float
    client_cores: float
    machine_cores: float


class Meter:
    """Samples CPU counters at start and stop; ``server_pid`` is the process serving the reads
    (xstreams, or redis-server for the redis anchor), kept out of the client figure."""

    def __init__(self, server_pid: int | None, exclude: set[int]) -> None:
        self.server_pid = server_pid
        self.exclude = exclude

    def _snapshot(self) -> tuple[float, float, dict[int, float], float]:
        server = proc_cpu_seconds(self.server_pid) if self.server_pid else 0.0
        return time.monotonic(), server, tree_cpu_seconds(self.exclude), machine_busy_seconds()

    @contextmanager
    def measure(self, out: list[float]) -> Iterator[None]:
        """Fills ``out`` with [seconds, server cores, client cores, machine cores]."""
        t0, s0, c0, m0 = self._snapshot()
        yield
        t1, s1, c1, m1 = self._snapshot()
        wall = t1 - t0
        out[:] = [wall, (s1 - s0) / wall, tree_delta(c0, c1) / wall, (m1 - m0) / wall]


def timed(meter: Meter, action: Callable[[], int]) -> Sample:
    """Run ``action`` (which returns the rows it saw) under the meter."""
    figures: list[float] = []
    with meter.measure(figures):
        rows = action()
    wall, server, client, machine = figures
    return Sample(round(wall, 3), rows, round(rows / wall, 1), round(server, 2),
                  round(client, 2), round(machine, 2))  # fmt: skip


@dataclass
class Cell:
    """A measured configuration: its samples after the warm-ups, summarised by the median."""

    key: str
    label: str
    samples: list[Sample] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def med(name: str) -> float:
            return round(statistics.median(getattr(s, name) for s in self.samples), 2)

        rates = [s.rate for s in self.samples]
        return {
            "label": self.label,
            "rows": self.samples[0].rows if self.samples else 0,
            "rate": med("rate"),
            "rate_min": min(rates),
            "rate_max": max(rates),
            "seconds": med("seconds"),
            "server_cores": med("server_cores"),
            "client_cores": med("client_cores"),
            "machine_cores": med("machine_cores"),
            "samples": [asdict(s) for s in self.samples],
        }


def repeat(cell: Cell, meter: Meter, action: Callable[[], int], rounds: int, warmups: int,
           ) -> Cell:  # fmt: skip
    """Warm-ups first (JIT, Python worker start, page cache), then ``rounds`` timed runs."""
    for _ in range(warmups):
        action()
    for _ in range(rounds):
        cell.samples.append(timed(meter, action))
        log_stderr(f"  {cell.label}: {cell.samples[-1].rate:,.0f} entries/s")
    return cell
