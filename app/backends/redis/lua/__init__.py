"""The Redis backend's Lua scripts: one file each, read and put together in one place.

A script (``name.lua``) or a shared piece of one (``includes/name.lua``) opens with a header
of ``--`` comment lines: the keys it takes, its arguments, what it returns. The header is
left out of the text sent to Redis. In what follows it:

- a line ``--@include name`` stands for the text of ``includes/name.lua`` (put together the
  same way), so a helper such as the NOGROUP check exists once;
- ``${NAME}`` stands for a value the Python side owns (``constants``): the reply codes of
  ``Reply``, which Python reads back by name, Redis's WRONGTYPE text, the dead-letter
  fields. One table serves both languages.

``make lint`` runs luacheck over every script as Redis receives it (``tests/backends/
test_lua_files.py`` also loads each into a real Redis).
"""

from __future__ import annotations

import re
from enum import IntEnum
from functools import cache
from importlib.resources import files

from app.engine.dead_letters import DEAD_LETTER_FIELDS, DEAD_LETTER_HOPS, MAX_DEAD_LETTER_HOPS
from app.engine.errors import WRONGTYPE

__all__ = ["Reply", "constants", "for_lint", "include", "names", "script"]


class Reply(IntEnum):
    """The first item of a script's reply, where it says how the script ended. The same
    number means one thing per family of scripts, so it has a name per meaning."""

    REFUSED = 0  # the caps (caps.py, limits.py): past a limit, nothing ran
    NO_GROUP = 0  # policies and webhooks: the group does not exist
    RAN = 1  # the command ran: its reply follows
    TOO_MANY = 2  # the caps: a group or consumer too many, a listing past the limit
    ASK_AGAIN = 2  # a policy: send again with the streams of its dead-letter chain named
    CYCLE = 3  # a policy: its dead-letter chain comes back to its own stream


def constants() -> dict[str, str]:
    """Every ``${NAME}`` a script may hold, as Lua text."""
    values = {name: str(int(code)) for name, code in Reply.__members__.items()}
    values["WRONGTYPE"] = WRONGTYPE
    values["DL_NAMES"] = "{" + ", ".join(f"'{n}'" for n in DEAD_LETTER_FIELDS) + "}"
    values["DL_HOPS"] = DEAD_LETTER_HOPS
    values["MAX_HOPS"] = str(MAX_DEAD_LETTER_HOPS)
    return values


_HERE = files(__name__)
_INCLUDE = re.compile(r"^--@include ([a-z_]+)\n", re.MULTILINE)
_CONSTANT = re.compile(r"\$\{([A-Z_]+)\}")


@cache
def script(name: str) -> str:
    """The text Redis runs for ``name.lua``."""
    return _assemble(_HERE.joinpath(f"{name}.lua").read_text())


@cache
def include(name: str) -> str:
    """The text of ``includes/name.lua``, for scripts Python puts together at run time."""
    return _assemble(_HERE.joinpath("includes", f"{name}.lua").read_text())


def for_lint(name: str) -> str:
    """``script(name)`` with each include marked for luacheck: an include is a library, of
    which a script uses some helpers, so its unused locals are not warned about; every
    other check applies to it."""
    return _assemble(_HERE.joinpath(f"{name}.lua").read_text(), lint=True)


def names() -> list[str]:
    """Every script's name (not the includes')."""
    return sorted(p.name[:-4] for p in _HERE.iterdir() if p.name.endswith(".lua"))


def _assemble(text: str, lint: bool = False) -> str:
    body = _without_header(text)
    if lint:
        body = _INCLUDE.sub(lambda m: _LINT_INCLUDE.format(_included(m[1])), body)
    else:
        body = _INCLUDE.sub(lambda m: include(m[1]), body)
    values = constants()
    return _CONSTANT.sub(lambda m: values[m[1]], body)


_LINT_INCLUDE = "-- luacheck: push ignore 211\n{}-- luacheck: pop\n"


def _included(name: str) -> str:
    return _assemble(_HERE.joinpath("includes", f"{name}.lua").read_text(), lint=True)


def _without_header(text: str) -> str:
    """``text`` after its leading ``--`` comment lines (not ``--@`` directives)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i].startswith("--") and not lines[i].startswith("--@"):
        i += 1
    return "\n".join(lines[i:])
