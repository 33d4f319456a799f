"""Redis commands over the engine: the table, parsers and typed operations.

Importing this package registers every command in ``COMMANDS``.
"""

from app.engine.commands import (
    claims,
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
    "claims",
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
