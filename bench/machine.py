"""The machine facts every benchmark records beside its figures: cores, load, versions.

Absolute figures drift on a shared 2-core machine; a reader needs these to judge them.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any


def first_line(argv: list[str]) -> str:
    """The first line a tool prints about itself, or "absent"."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "absent"
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else "absent"


def facts(packages: Sequence[str], tools: dict[str, list[str]]) -> dict[str, Any]:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    found: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu": model,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    for name, argv in tools.items():
        found[name] = first_line(argv)
    for package in packages:
        try:
            found[package] = version(package)
        except Exception:
            found[package] = "absent"
    return found
