"""Redis commands over the engine: the table, parsers and typed operations.

Importing this package registers every command in ``COMMANDS``.
"""

from app.engine.commands import dump, groups, info, keys, reads, server, streams
from app.engine.commands.table import COMMANDS, Command, Flag, lookup

__all__ = [
    "COMMANDS",
    "Command",
    "Flag",
    "dump",
    "groups",
    "info",
    "keys",
    "lookup",
    "reads",
    "server",
    "streams",
]
