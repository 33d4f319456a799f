"""Act first, explain after: how a route answers for a path whose stream or group is missing.

A REST path names a stream (and a group): when it is not there, the answer is a 404 in the
words every path uses ("ERR no such key", or NOGROUP naming both key and group), whatever the
Redis command behind the route says (XACK and XTRIM answer 0, XINFO CONSUMERS "no such key",
XGROUP "requires the key to exist"). Looking first (does the group exist?) and then acting
would be two backend calls: on Redis another client may change the state between them, and
the hot path pays a round trip for a question whose answer is almost always yes. So a route
acts first, with the one backend call the operation is, and asks only when the answer leaves
the question open.

Why each reply is explained by one point in time (linearizability), case by case:

- The act answered or failed unambiguously: its own point. A ``NotFound`` error from the act
  (``on_group``) is rewritten into the path's words, but describes the state the act met.
- The act failed with an argument error whose precedence over a missing group may differ from
  the path's (``explained``): the act changed nothing, so the lookup's point explains the
  reply: 404 if the group is missing there, the argument error (which holds whatever the
  state) otherwise.
- The act answered 0 (or an empty range), which a missing key or group also gives (XACK,
  XTRIM, XDEL, XRANGE): it changed nothing. A lookup that finds nothing answers 404 at its
  point. A lookup that finds the thing answers the 0: at the act's point if it existed then;
  if it was created in between, at the point just after its creation, where the act would
  also have found nothing to do (a group made by XGROUP CREATE has an empty PEL). The
  exceptions are a key or group that appears, one round trip after the act, already holding
  what the act would have changed or shown: a group created and read from in one MULTI or
  script, a key moved in by RENAME, COPY or RESTORE, a stream created by an XADD whose entry
  the trim would remove or the range would show. REST then answers 0 where Redis would have
  answered otherwise at either point; the request changed nothing either way. Closing that
  window needs the act and the lookup in one Redis step (MULTI or a script) on the ambiguous
  path: not done, as no reply has been seen to need it.
- A count above 0 proves the thing existed at the act's point: no lookup is made (a lookup
  after could find it destroyed since, and answer 404 for a request that took effect).
- A write whose reply shows the state it made (a group or consumer created, a group's ID
  set) reads it with a second call: the write is of its own point, the body of a moment
  later, as any representation a client reads after its write. Redis has no reply that both
  creates and shows a group or a consumer.
- XGROUP DELCONSUMER keeps a look before it: its 0 is both "deleted a consumer with nothing
  pending" and "no such consumer" (app/api/rest/consumers.py).

On the embedded backend the question does not arise: no backend call awaits, so a route's act
and its lookup run in one turn of the event loop, with nothing between them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.backends.errors import BackendUnavailable
from app.backends.roles import ExplainRoles
from app.engine.commands.groups import no_such_group
from app.engine.errors import CommandError, Conflict, NotFound, WrongType

__all__ = ["explained", "on_group", "parsed_on_group"]

T = TypeVar("T")


async def on_group(backend: ExplainRoles, stream: str, group: str, act: Awaitable[T]) -> T:
    """``act``, an operation on the group a path names, answered as every path under a group
    answers.

    ``NotFound`` (the key or the group missing, in whichever words the command uses: XCLAIM's
    NOGROUP, XINFO CONSUMERS' "no such key", XGROUP's "requires the key to exist") becomes
    NOGROUP naming both, as of the act's point: no second call. Another error the command may
    check before the group (Redis parses XAUTOCLAIM's COUNT first, the engine its limits) is
    raised only after a lookup shows the group is there (``explained``)."""
    try:
        return await act
    except NotFound:
        raise no_such_group(stream, group) from None
    except CommandError as e:
        await explained(backend, stream, group, e)
        raise


async def explained(
    backend: ExplainRoles, stream: str, group: str | None, exc: CommandError
) -> None:
    """Return when ``exc``, the error of a request that changed nothing, is the answer; raise
    the path's 404 instead when the stream (``group`` None) or the group is missing now.

    Not for errors that say nothing about the request: the backend's unavailability (a write
    that ``ReplicasUnavailable`` reports did take place); WRONGTYPE, which the lookup would
    answer alike; and errors that show the thing was there (a conflict is with its state)."""
    if isinstance(exc, (BackendUnavailable, WrongType, NotFound, Conflict)):
        return
    if group is None:
        await backend.stream_info(stream)
    else:
        await backend.group(stream, group)


async def parsed_on_group(
    backend: ExplainRoles, stream: str, group: str, parse: Callable[[], T]
) -> T:
    """``parse()``; when it refuses, a missing group's 404 comes first, as the path is looked
    at before the body: it costs a call only on the error path."""
    try:
        return parse()
    except CommandError as e:
        await explained(backend, stream, group, e)
        raise
