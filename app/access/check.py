"""The one permission check: a grant, a command line, and the command table's word on it.

Every surface asks here. The command endpoint checks each command it runs; REST and SSE check
the Redis command their operation models (appending is XADD, a tail is XREAD, a consumer's
read is XREADGROUP), with the stream named in the path as its key, so the three surfaces
cannot disagree. What a command needs comes from the command table (``Command.access``, its
key positions): a multi-key command needs the verb on every key it names.

Who asks matters as well as what they hold: a credential that came in a cookie on a request
not shown to come from a trusted page (``Principal.writes``, app/access/principal) may run
only commands that do not write, whatever its grant and whatever the HTTP method. The command
table's write flag decides, so a GET that writes (the consumer-group event stream is
XREADGROUP) is refused like a POST.

Refusals carry Redis's own texts: a verb the caller holds on no stream at all refuses the
command (``NOPERM this user has no permissions to run the 'xadd' command``); a verb held, but
not on one of the keys, refuses the key (``... to access one of the keys used as arguments``).
"""

from __future__ import annotations

from collections.abc import Iterable

from app.access.grants import Grant, Verb
from app.access.principal import Principal
from app.engine.commands.table import Access, Command
from app.engine.errors import CommandError

__all__ = ["NoPerm", "check_command", "check_keys", "readable", "verbs_on"]


class NoPerm(CommandError):
    """Credentials that do not reach: 403 on REST and SSE, Redis's NOPERM on the command
    endpoint."""

    @classmethod
    def command(cls, name: str) -> NoPerm:
        return cls(f"NOPERM this user has no permissions to run the '{name}' command")

    @classmethod
    def key(cls) -> NoPerm:
        return cls(
            "NOPERM this user has no permissions to access one of the keys used as arguments"
        )

    @classmethod
    def cookie(cls, name: str) -> NoPerm:
        return cls(
            f"NOPERM a cookie cannot authorize the '{name}' command, which writes, from another"
            " site: send the credential in the Authorization header or access_token"
        )


_VERBS = {Access.READ: Verb.READ, Access.CONSUME: Verb.CONSUME, Access.WRITE: Verb.WRITE}
# XACKDEL acknowledges (a consumer's act) and deletes (a writer's): it needs both verbs.
_BOTH = (Verb.CONSUME, Verb.WRITE)


def check_command(principal: Principal, cmd: Command, argv: list[str]) -> None:
    """Raise ``NoPerm`` unless ``principal`` may run ``argv`` (``cmd`` is its table entry)."""
    check_keys(principal, cmd, cmd.keys(argv))


def check_keys(principal: Principal, cmd: Command, keys: list[str] | None) -> None:
    """Raise ``NoPerm`` unless ``principal`` may run ``cmd`` on ``keys`` (None: every key),
    for a surface that knows the keys from a path rather than an argv."""
    if cmd.writes and not principal.writes:
        raise NoPerm.cookie(cmd.name)
    grant = principal.grant
    access = cmd.access
    if grant.admin or access is Access.NONE:
        return
    if access is Access.ADMIN:
        raise NoPerm.command(cmd.name)
    if access is Access.LIST:
        if not grant.has(Verb.READ):
            raise NoPerm.command(cmd.name)
        return  # the reply is narrowed to what may be read (``readable``)
    verbs = _BOTH if access is Access.CONSUME_WRITE else (_VERBS[access],)
    if not all(grant.has(verb) for verb in verbs):
        raise NoPerm.command(cmd.name)
    if keys is None:
        raise NoPerm.command(cmd.name)
    for key in keys:
        if not all(grant.allows(verb, key) for verb in verbs):
            raise NoPerm.key()


def readable(grant: Grant, keys: Iterable[str]) -> list[str]:
    """The keys of a listing (SCAN, ``GET /v1/streams``) the grant may read."""
    if grant.admin:
        return list(keys)
    return [k for k in keys if grant.allows(Verb.READ, k)]


STREAM_VERBS = (Verb.READ, Verb.CONSUME, Verb.WRITE)


def verbs_on(grant: Grant, key: str) -> list[Verb]:
    """The verbs ``grant`` holds on the stream ``key``: exactly those for which ``check_keys``
    lets a command of that category through on it, so a client that asks (``GET /v1/whoami``)
    learns what the check will decide instead of matching globs itself."""
    return [verb for verb in STREAM_VERBS if grant.allows(verb, key)]
