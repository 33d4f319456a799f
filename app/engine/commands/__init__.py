"""Redis commands over the engine: the table, parsers and typed operations.

Importing this package registers every command in ``COMMANDS``.
"""

from app.engine.commands import (
    deletes,
    dump,
    groups,
    info,
    keys,
    nack,
    reads,
    server,
    streams,
    xcfgset,
    xidmprecord,
)
from app.engine.commands.table import COMMANDS, Command, Flag, lookup

__all__ = [
    "COMMANDS",
    "Command",
    "Flag",
    "deletes",
    "dump",
    "groups",
    "info",
    "keys",
    "lookup",
    "nack",
    "reads",
    "server",
    "streams",
    "xcfgset",
    "xidmprecord",
]
