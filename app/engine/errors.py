"""The engine's one exception tree; each error carries Redis's exact reply text.

    CommandError               any error reply; ``text`` is what redis-server would send
     ├── WrongArgument         the request itself is malformed: a bad option, number or ID
     │    ├── WrongArity       wrong number of arguments for a command
     │    └── SyntaxError_     Redis's "syntax error"
     ├── NotFound              what the request names is not there
     │    ├── NoSuchKey        "ERR no such key"
     │    ├── NoGroup          NOGROUP: the consumer group (or its key) does not exist
     │    ├── NoSuchConsumer   the consumer is not in the group (REST's lookup)
     │    ├── NoSuchEntry      no entry with that ID (REST's lookup)
     │    └── Unblocked        UNBLOCKED: a blocked reader's stream was deleted
     ├── Conflict              the request contradicts the state it meets
     │    ├── BusyGroup        BUSYGROUP: the group exists already
     │    └── TooMany          a stream holds its most groups, or a group its most consumers
     │    (an ID not greater than the stream's top, XSETID below the top, IDs exhausted)
     ├── WrongType             WRONGTYPE: the key holds another type
     └── TooLarge              past a size: an entry too large, a limit of the service

The classes say what kind of failure it is, so a surface chooses its answer by class (the
REST status table in app/api/errors.py) and never by reading the text. Each is raised where
its text is made. ``classify`` builds the same classes from a text alone: the Redis backend
calls it on redis-server's error replies, so both backends' errors fall in the same classes.
"""

from __future__ import annotations

__all__ = [
    "INVALID_ID",
    "NOT_AN_INTEGER",
    "BusyGroup",
    "CommandError",
    "Conflict",
    "NoGroup",
    "NoSuchConsumer",
    "NoSuchEntry",
    "NoSuchKey",
    "NotFound",
    "SyntaxError_",
    "TooLarge",
    "TooMany",
    "Unblocked",
    "WrongArgument",
    "WrongArity",
    "WrongType",
    "classify",
    "invalid_id",
    "not_an_integer",
]


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


class WrongArgument(CommandError):
    """The request is malformed whatever the state: an unknown option, a number or an ID
    that does not parse or is out of range."""


class WrongArity(WrongArgument):
    def __init__(self, fullname: str) -> None:
        super().__init__(f"ERR wrong number of arguments for '{fullname}' command")


SYNTAX_ERROR = "ERR syntax error"


class SyntaxError_(WrongArgument):
    def __init__(self, text: str = SYNTAX_ERROR) -> None:
        super().__init__(text)


class NotFound(CommandError):
    """What the request names (a stream, group, consumer, entry) is not there."""


NO_SUCH_KEY = "ERR no such key"


class NoSuchKey(NotFound):
    def __init__(self, text: str = NO_SUCH_KEY) -> None:
        super().__init__(text)


class NoGroup(NotFound):
    pass


class NoSuchConsumer(NotFound):
    """Not a Redis reply (XGROUP DELCONSUMER answers 0): REST's 404 for a consumer its path
    names, in Redis's style."""

    @classmethod
    def named(cls, group: str, consumer: str) -> NoSuchConsumer:
        return cls(f"ERR no such consumer '{consumer}' in group '{group}'")


NO_SUCH_ENTRY = "ERR no such entry"


class NoSuchEntry(NotFound):
    """Not a Redis reply (XRANGE answers an empty array): REST's 404 for an entry its path
    names."""

    def __init__(self, text: str = NO_SUCH_ENTRY) -> None:
        super().__init__(text)


class Unblocked(NotFound):
    """A blocked reader's stream was deleted under it."""


class Conflict(CommandError):
    """Well formed, but refused by the state it meets: the group exists, the ID is not
    greater than the stream's top, the stream has used up its IDs."""


BUSYGROUP = "BUSYGROUP Consumer Group name already exists"


class BusyGroup(Conflict):
    def __init__(self, text: str = BUSYGROUP) -> None:
        super().__init__(text)


WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
# A transaction with a command refused as it was queued: none of it ran.
EXECABORT = "EXECABORT Transaction discarded because of previous errors."


class TooMany(Conflict):
    """A stream already holds ``max_stream_groups`` groups, or a group ``max_group_consumers``
    consumers: one more is refused (app/engine/limits.py). A service limit, not Redis's: it
    keeps every listing of groups and consumers bounded."""


class WrongType(CommandError):
    def __init__(self, text: str = WRONGTYPE) -> None:
        super().__init__(text)


class TooLarge(CommandError):
    """Past a size: an entry too large to store, or one of the service's limits on the work
    one command may ask for (app/engine/limits.py)."""


NOT_AN_INTEGER = "ERR value is not an integer or out of range"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


def not_an_integer() -> WrongArgument:
    return WrongArgument(NOT_AN_INTEGER)


def invalid_id() -> WrongArgument:
    return WrongArgument(INVALID_ID)


# --- classify: the class of an error known only by its text ------------------------------
# Redis's words, matched as redis-server 7.0 writes them (t_stream.c, server.c, object.c).
# The engine raises each of these with the class given here: tests/engine/test_classify.py
# holds the two to one table.

_BY_CODE: dict[str, type[CommandError]] = {
    "NOGROUP": NoGroup,
    "BUSYGROUP": BusyGroup,
    "WRONGTYPE": WrongType,
    "UNBLOCKED": Unblocked,
}

_NOT_FOUND_PREFIXES = (
    NO_SUCH_KEY,
    NO_SUCH_ENTRY,
    "ERR no such consumer ",
    "ERR No such message in stream",  # XIDMPRECORD (Redis 8.6)
)
_NOT_FOUND_PARTS = ("The XGROUP subcommand requires the key to exist",)
_CONFLICT_PARTS = (
    "is equal or smaller than the target stream top item",  # XADD
    "is smaller than the target stream top item",  # XSETID
    "smaller than current max_deleted_entry_id",
    "is smaller than the target stream length",  # XSETID ENTRIESADDED
    "exhausted the last possible ID",
    "IID already exists for this producer with a different stream ID",  # XIDMPRECORD
)
_TOO_MANY_PARTS = ("(max_stream_groups)", "(max_group_consumers)")
_TOO_LARGE_PARTS = (
    "Elements are too large to be stored",
    "(max_reply_entries)",
    "(max_read_keys)",
)
_WRONG_ARGUMENT_PREFIXES = (
    SYNTAX_ERROR,
    "ERR wrong number of arguments",
    NOT_AN_INTEGER,
    "ERR Invalid stream ID",
    "ERR invalid start ID",
    "ERR invalid end ID",
    "ERR timeout is",
    "ERR value for ENTRIESREAD",
    "ERR The ID specified in XADD must be greater than 0-0",
    "ERR The MAXLEN argument",
    "ERR The LIMIT argument",
    "ERR The $ ID is meaningless",
    "ERR The > ID can be specified only",
    "ERR The GROUP option",
    "ERR The NOACK option",
    "ERR Missing GROUP option",
    "ERR Unbalanced XREAD list",
    "ERR Unrecognized XCLAIM option",
    "ERR COUNT must be > 0",
    "ERR entries_added must be positive",
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
    "ERR unknown subcommand",
    "ERR unknown command",
    "ERR invalid cursor",
    # Redis 8.2 - 8.8 (XDELEX / XACKDEL, XREADGROUP ... CLAIM, XNACK)
    "ERR Number of IDs must be a positive integer",
    "ERR The `numids` parameter must match",
    "ERR min-idle-time ",
    "ERR The CLAIM option",
    "ERR Invalid RETRYCOUNT option argument",
    "ERR producer ID must be non-empty",  # XIDMPRECORD (Redis 8.6)
    "ERR idempotent ID must be non-empty",
)


def classify(text: str) -> CommandError:
    """The error a reply's ``text`` is, as the class the engine raises with that text.

    For the Redis backend: redis-server's error replies become the engine's classes, so a
    surface answers alike whichever backend made the error. A text of no known kind is a
    plain ``CommandError`` (a client mistake to REST, as any error of no other class)."""
    code = text.split(" ", 1)[0]
    by_code = _BY_CODE.get(code)
    if by_code is not None:
        return by_code(text)
    if text.startswith(_NOT_FOUND_PREFIXES) or any(p in text for p in _NOT_FOUND_PARTS):
        if text == NO_SUCH_KEY:
            return NoSuchKey(text)
        if text == NO_SUCH_ENTRY:
            return NoSuchEntry(text)
        return NoSuchConsumer(text) if text.startswith("ERR no such consumer ") else NotFound(text)
    if any(p in text for p in _TOO_MANY_PARTS):
        return TooMany(text)
    if any(p in text for p in _CONFLICT_PARTS):
        return Conflict(text)
    if any(p in text for p in _TOO_LARGE_PARTS):
        return TooLarge(text)
    if text.startswith(_WRONG_ARGUMENT_PREFIXES):
        return SyntaxError_(text) if text == SYNTAX_ERROR else WrongArgument(text)
    return CommandError(text)
