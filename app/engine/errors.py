"""The engine's one exception tree; each error carries Redis's exact reply text.

    CommandError            any error reply; ``text`` is what redis-server would send
     ├── WrongArity         wrong number of arguments for a command
     ├── SyntaxError_       Redis's "syntax error"
     ├── NoGroup            NOGROUP: the consumer group (or its key) does not exist
     ├── BusyGroup          BUSYGROUP: the group exists already
     └── WrongType          WRONGTYPE: the key holds another type

The API maps these to HTTP statuses in one table (``code`` is the first word of ``text``).
"""

from __future__ import annotations


class CommandError(Exception):
    """A Redis error reply. ``text`` includes the code prefix (``ERR``, ``NOGROUP`` ...)."""

    def __init__(self, text: str) -> None:
        # Redis replaces line breaks in error replies with spaces (addReplyErrorFormat).
        text = text.replace("\r", " ").replace("\n", " ")
        super().__init__(text)
        self.text = text

    @property
    def code(self) -> str:
        return self.text.split(" ", 1)[0]

    @classmethod
    def err(cls, message: str) -> CommandError:
        return cls("ERR " + message)


class WrongArity(CommandError):
    def __init__(self, fullname: str) -> None:
        super().__init__(f"ERR wrong number of arguments for '{fullname}' command")


class SyntaxError_(CommandError):
    def __init__(self) -> None:
        super().__init__("ERR syntax error")


class NoGroup(CommandError):
    pass


class BusyGroup(CommandError):
    def __init__(self) -> None:
        super().__init__("BUSYGROUP Consumer Group name already exists")


class WrongType(CommandError):
    def __init__(self) -> None:
        super().__init__("WRONGTYPE Operation against a key holding the wrong kind of value")


NOT_AN_INTEGER = "ERR value is not an integer or out of range"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


def not_an_integer() -> CommandError:
    return CommandError(NOT_AN_INTEGER)


def invalid_id() -> CommandError:
    return CommandError(INVALID_ID)
