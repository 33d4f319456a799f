"""The parameters CONFIG GET / SET reach: those that can change while the service runs.

``stream-node-max-entries`` and ``stream-node-max-bytes`` decide where a new macro node
starts, so they decide what ``~`` trimming removes: after CONFIG SET, every stream's next
append uses the new value, as in Redis (nodes already written keep their size). Values are
parsed with Redis's own rules and refused in its words (``config.c``): the entries limit is
a strict integer, the bytes limit a memory value (``4096``, ``4kb``, ``1m``).

``stream-idmp-duration`` and ``stream-idmp-maxsize`` (Redis 8.6) are the IDMP window and
size a stream starts with (XCFGSET changes one stream's); strict integers within XCFGSET's
bounds, refused in redis-server 8.6's words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.engine.errors import CommandError, SyntaxError_
from app.engine.glob import glob_match
from app.engine.idmp import (
    DEFAULT_DURATION_S,
    DEFAULT_MAXSIZE,
    MAX_DURATION_S,
    MAX_MAXSIZE,
    MIN_DURATION_S,
    MIN_MAXSIZE,
)
from app.engine.ids import INT64_MAX, UINT64_MAX, string2ll

_MEMORY_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1024,
    "m": 1000**2,
    "mb": 1024**2,
    "g": 1000**3,
    "gb": 1024**3,
}


# Redis matches config names without case (``stringmatch(..., nocase=1)``, ASCII ``tolower``);
# the names are lower case, so a pattern lowered the same way matches as Redis's does.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class BadValue(Exception):
    """A value CONFIG SET refuses; the text says why, in Redis's words."""


def _integer(text: str) -> int:
    """An integer config (``string2ll``), 0 to LLONG_MAX."""
    value = string2ll(text)
    if value is None:
        raise BadValue("argument couldn't be parsed into an integer")
    if value < 0:
        raise BadValue(f"argument must be between 0 and {INT64_MAX} inclusive")
    return value


def _memory(text: str) -> int:
    """A memory config (``memtoull``: digits and an optional unit, no sign), 0 to LONG_MAX.
    Too many digits wrap as strtoull and the C multiplication do, then fail the bound."""
    digits = len(text) - len(text.lstrip("0123456789"))
    unit = _MEMORY_UNITS.get(text[digits:].lower())
    if unit is None or digits >= 128 or not text[:digits].isascii():
        raise BadValue("argument must be a memory value")
    value = (min(int(text[:digits] or "0"), UINT64_MAX) * unit) % (UINT64_MAX + 1)
    if value > INT64_MAX:
        raise BadValue(f"argument must be between 0 and {INT64_MAX} inclusive")
    return value


def _bounded(low: int, high: int) -> Callable[[str], int]:
    """An integer config with bounds of its own (``createIntConfig``)."""

    def parse(text: str) -> int:
        value = string2ll(text)
        if value is None:
            raise BadValue("argument couldn't be parsed into an integer")
        if not low <= value <= high:
            raise BadValue(f"argument must be between {low} and {high} inclusive")
        return value

    return parse


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    parse: Callable[[str], int]  # raises BadValue
    default: int


PARAMETERS: dict[str, Parameter] = {
    p.name: p
    # A glob lists them in this order: 7.0's for the node limits, 8.6's for the IDMP ones.
    for p in (
        Parameter("stream-idmp-maxsize", _bounded(MIN_MAXSIZE, MAX_MAXSIZE), DEFAULT_MAXSIZE),
        Parameter("stream-node-max-bytes", _memory, 4096),
        Parameter("stream-node-max-entries", _integer, 100),
        Parameter(
            "stream-idmp-duration", _bounded(MIN_DURATION_S, MAX_DURATION_S), DEFAULT_DURATION_S
        ),
    )
}


def parameter(name: str) -> Parameter | None:
    """The parameter ``name`` names, case-insensitively (``lookupConfig``)."""
    return PARAMETERS.get(name.lower())


def matching(patterns: list[str]) -> list[tuple[str, Parameter]]:
    """CONFIG GET's selection: each pattern without glob characters names one parameter
    (replied under the name as given), others match every name case-insensitively; a
    parameter is listed once."""
    found: dict[str, tuple[str, Parameter]] = {}
    for pattern in patterns:
        if not any(c in pattern for c in "[*?"):
            p = parameter(pattern)
            if p is not None and p.name not in found:
                found[p.name] = (pattern, p)
            continue
        for name, p in PARAMETERS.items():
            if name not in found and glob_match(pattern.translate(_ASCII_LOWER), name):
                found[name] = (name, p)
    return list(found.values())


def parse_set(pairs: list[str]) -> dict[str, int]:
    """CONFIG SET's ``parameter value ...``: every name checked first (an unknown one, then a
    repeated one, refuses the whole command), then every value; nothing is set unless all
    are valid."""
    if len(pairs) % 2:
        raise SyntaxError_()
    chosen: list[tuple[str, Parameter, str]] = []
    for i in range(0, len(pairs), 2):
        name = pairs[i]
        p = parameter(name)
        if p is None:
            raise CommandError.err(
                f"Unknown option or number of arguments for CONFIG SET - '{name}'"
            )
        chosen.append((name, p, pairs[i + 1]))
    seen: set[str] = set()
    for name, p, _ in chosen:
        if p.name in seen:
            raise _failed(name, "duplicate parameter")
        seen.add(p.name)
    values: dict[str, int] = {}
    for _, p, text in chosen:
        try:
            values[p.name] = p.parse(text)
        except BadValue as e:
            raise _failed(p.name, str(e)) from e
    return values


def _failed(name: str, why: str) -> CommandError:
    return CommandError.err(f"CONFIG SET failed (possibly related to argument '{name}') - {why}")
