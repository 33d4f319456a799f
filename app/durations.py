"""Durations as people type them on the command line: ``45s``, ``30m``, ``12h``, ``7d``, ``2w``.

One parser for every option that takes one (archive ``--before``, report ``--since`` and
``--until``, keys ``--expires``), so they all accept the same units.
"""

from __future__ import annotations

import re

__all__ = ["parse_duration_ms"]

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_duration_ms(text: str) -> int | None:
    """Milliseconds in ``text``, or None when it is not a duration."""
    m = _DURATION.fullmatch(text.strip())
    return int(m.group(1)) * _UNIT_MS[m.group(2)] if m else None
