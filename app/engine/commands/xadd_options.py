"""XADD's and XTRIM's options: trimming clauses, reference policies and IDMP.

One parser (``parse_trim_options``, Redis's ``streamParseAddOrTrimArgsOrReply``) for the
tokens, and typed builders (``trim_spec``, ``idmp_key``) that REST uses, with the same checks
and the same errors in the same order, so both surfaces refuse a clause alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from app.engine.commands.args import int_arg
from app.engine.errors import (
    CommandError,
    SyntaxError_,
    WrongArgument,
)
from app.engine.ids import (
    MIN_ID,
    StreamID,
    parse_id,
    parse_strict_id,
)
from app.engine.keyspace import Keyspace
from app.engine.refs import RefPolicy
from app.engine.stream import (
    STREAM_LISTPACK_MAX_SIZE,
    TrimSpec,
    TrimStrategy,
)


class IdmpKey(NamedTuple):
    """XADD's IDMP pair: a producer and its idempotent ID, or (IDMPAUTO) the producer alone,
    the iid then derived from the entry's fields when it is appended (``idmp.auto_iid``)."""

    producer: str
    iid: str | None  # None: IDMPAUTO


IDMP_TWICE = "syntax error, IDMP/IDMPAUTO specified multiple times"
IDMP_EXPLICIT_ID = "syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"
IDMP_NO_PRODUCER = "syntax error, {} requires a non-empty producer ID"
IDMP_NO_IID = "syntax error, IDMP requires a non-empty idempotent ID"


def idmp_key(producer: str, iid: str | None) -> IdmpKey:
    """An IDMP pair from typed values (REST), with the checks XADD makes of the tokens."""
    if not producer:
        raise WrongArgument.err(IDMP_NO_PRODUCER.format("IDMP" if iid is not None else "IDMPAUTO"))
    if iid is not None and not iid:
        raise WrongArgument.err(IDMP_NO_IID)
    return IdmpKey(producer, iid)


DEFAULT_LIMIT = -1
_POLICIES = frozenset(p.lower() for p in RefPolicy)  # KEEPREF | DELREF | ACKED (Redis 8.2)
"""``TrimSpec.limit`` of a ``~`` clause without LIMIT, built where no keyspace is at hand
(``trim_spec``: REST and SSE through a backend): the limit Redis gives such a clause
(``approx_limit``: 100 × stream-node-max-entries, as configured when the trim runs) is
filled in by the operation that trims (``xadd``, ``xtrim``), before it is journaled. A
Redis backend sends such a clause without LIMIT, and Redis applies its own."""


def approx_limit(ks: Keyspace) -> int:
    """The LIMIT of ``~`` trimming when none is given (``streamParseAddOrTrimArgsOrReply``)."""
    limit = 100 * ks.config.node_max_entries
    if limit <= 0 or limit > STREAM_LISTPACK_MAX_SIZE:
        limit = 10000
    return limit


def with_default_limit(ks: Keyspace, spec: TrimSpec) -> TrimSpec:
    """``spec`` with ``DEFAULT_LIMIT`` replaced by the keyspace's ``approx_limit``."""
    if spec.limit != DEFAULT_LIMIT:
        return spec
    return replace(spec, limit=approx_limit(ks))


def _maxlen_arg(maxlen: int) -> int:
    if maxlen < 0:
        raise WrongArgument.err("The MAXLEN argument must be >= 0.")
    return maxlen


def _limit_arg(limit: int) -> int:
    if limit < 0:
        raise WrongArgument.err("The LIMIT argument must be >= 0.")
    return limit


def _both_strategies() -> CommandError:
    return WrongArgument.err(
        "syntax error, MAXLEN and MINID options at the same time are not compatible"
    )


def _trim_clause(
    strategy: TrimStrategy | None,
    maxlen: int,
    minid: StreamID,
    approx: bool,
    limit: int | None,
    xadd: bool,
    policy: RefPolicy = RefPolicy.KEEPREF,
) -> TrimSpec | None:
    """The checks made once every option is read, in Redis's order; ``limit`` None when no
    LIMIT was given. A ``~`` clause without LIMIT gets ``DEFAULT_LIMIT``."""
    if limit and strategy is None:
        raise WrongArgument.err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy"
        )
    if not xadd and strategy is None:
        raise WrongArgument.err("syntax error, XTRIM must be called with a trimming strategy")
    if limit is not None:
        if not approx:
            raise WrongArgument.err(
                "syntax error, LIMIT cannot be used without the special ~ option"
            )
    else:
        limit = DEFAULT_LIMIT if approx else 0
    return None if strategy is None else TrimSpec(strategy, maxlen, minid, approx, limit, policy)


def trim_spec(
    *,
    maxlen: int | None = None,
    minid: str | None = None,
    approximate: bool = False,
    limit: int | None = None,
    policy: RefPolicy = RefPolicy.KEEPREF,
) -> TrimSpec:
    """An XTRIM clause from typed values (``MAXLEN|MINID [~] threshold [LIMIT count]``), with
    the errors ``parse_trim_options`` gives the same clause as tokens, in the same order.
    ``~`` without ``limit`` leaves ``DEFAULT_LIMIT``, resolved when the trim runs."""
    strategy: TrimStrategy | None = None
    max_entries = 0
    min_id = MIN_ID
    if maxlen is not None:
        max_entries = _maxlen_arg(maxlen)
        strategy = TrimStrategy.MAXLEN
    if minid is not None:
        if strategy is not None:
            raise _both_strategies()
        min_id = parse_strict_id(minid)
        strategy = TrimStrategy.MINID
    if limit is not None:
        _limit_arg(limit)
    spec = _trim_clause(strategy, max_entries, min_id, approximate, limit, False, policy)
    assert spec is not None  # _trim_clause refuses XTRIM without a strategy
    return spec


@dataclass(frozen=True, slots=True)
class AddTrimOptions:
    """What XADD's or XTRIM's options parsed to, typed so callers need no casts.

    ``end`` is the index where parsing stopped (XADD: the ID's). ``id``, ``seq_given`` and
    ``nomkstream`` are XADD's alone; XTRIM leaves them at their defaults."""

    end: int
    trim: TrimSpec | None
    id: StreamID | None = None
    seq_given: bool = True
    nomkstream: bool = False
    idmp: IdmpKey | None = None


def parse_trim_options(ks: Keyspace, argv: list[str], xadd: bool) -> AddTrimOptions:
    """The options of XADD / XTRIM (``streamParseAddOrTrimArgsOrReply``)."""
    strategy: TrimStrategy | None = None
    approx = False
    maxlen = 0
    minid = MIN_ID
    limit: int | None = None
    sid: StreamID | None = None
    seq_given = True
    nomkstream = False
    policy: RefPolicy | None = None
    idmp: IdmpKey | None = None
    i = 2
    n = len(argv)
    while i < n:
        moreargs = n - 1 - i
        opt = argv[i]
        if xadd and opt == "*":
            break
        low = opt.lower()
        if low in ("maxlen", "minid") and moreargs:
            if strategy is not None:
                raise _both_strategies()
            approx = False
            nxt = argv[i + 1]
            if moreargs >= 2 and nxt == "~":
                approx = True
                i += 1
            elif moreargs >= 2 and nxt == "=":
                i += 1
            if low == "maxlen":
                maxlen = _maxlen_arg(int_arg(argv[i + 1]))
                strategy = TrimStrategy.MAXLEN
            else:
                minid = parse_strict_id(argv[i + 1])
                strategy = TrimStrategy.MINID
            i += 1
        elif low == "limit" and moreargs:
            limit = _limit_arg(int_arg(argv[i + 1]))
            i += 1
        elif low in _POLICIES and policy is None:  # given twice: XADD reads an ID
            policy = RefPolicy(low.upper())
        elif xadd and low == "nomkstream":
            nomkstream = True
        elif xadd and ((low == "idmp" and moreargs >= 2) or (low == "idmpauto" and moreargs)):
            if idmp is not None:
                raise WrongArgument.err(IDMP_TWICE)
            if low == "idmp":
                idmp = idmp_key(argv[i + 1], argv[i + 2])
                i += 2
            else:
                idmp = idmp_key(argv[i + 1], None)
                i += 1
        elif xadd:
            sid, seq_given = parse_id(opt, 0, strict=True, allow_seq_auto=True)
            break
        else:
            raise SyntaxError_()
        i += 1
    if idmp is not None and sid is not None:
        raise WrongArgument.err(IDMP_EXPLICIT_ID)
    spec = _trim_clause(strategy, maxlen, minid, approx, limit, xadd, policy or RefPolicy.KEEPREF)
    trim = None if spec is None else with_default_limit(ks, spec)
    return AddTrimOptions(i, trim, sid, seq_given, nomkstream, idmp)
