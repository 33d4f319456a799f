"""The stream commands Redis added after 7.0, on a server of any version.

A server that has a command (features.py: XDELEX, XACKDEL and the KEEPREF | DELREF | ACKED
policies of XADD / XTRIM since 8.2, XREADGROUP ... CLAIM since 8.4, XADD IDMP / IDMPAUTO and
XCFGSET since 8.6, XNACK since 8.8) gets it unchanged. On an older one (Redis 7.0, most
managed Redis) the backend parses the command with the engine's parsers (the engine's
errors, in its order) and runs one Lua script (scripts.py) over 7.0's commands on the key's
slot, where they give the same result exactly:

- XDELEX: XDEL per ID; DELREF adds XACK in every group; ACKED deletes only an entry no group
  needs (none holds it pending, every group has delivered it), else answers 2.
- XACKDEL: XACK in the group, then the XDELEX rule of its policy.
- XADD / XTRIM: KEEPREF is the plain command. DELREF: the oldest live entries past the
  threshold (exactly: Redis trims inside a node under DELREF even with ``~``) go with an
  exact XTRIM and leave every group's PEL (XACK); with ``~`` only when its LIMIT cannot cut
  the trim short (it stops before a whole node that would pass it), else refused. ACKED:
  refused (7.0 cannot skip an entry in a trim, and XDEL would move max-deleted-entry-id).
- XREADGROUP ... CLAIM: the group's pending entries idle long enough, longest idle first
  (ties by ID), those gone from the stream left pending, claimed by XCLAIM, then new entries,
  each answered [id, fields, idle, delivery count] from before the claim. Without COUNT the
  claims stop at the reply limit. In a cluster, one script per slot (each key is checked
  first, in order). With BLOCK: the script, then a plain XREADGROUP BLOCK for at most the
  time until the next pending entry turns idle enough (``CLAIM_POLL_MS`` at most, so an
  XNACK elsewhere is seen), then the script again, until the timeout.
- XNACK: each pending ID (or, with FORCE, each ID in the stream) is claimed by the consumer
  named "" with delivery time 0 (so any claim takes it first) and the mode's delivery count
  (XCLAIM ... TIME 0 RETRYCOUNT n JUSTID [FORCE]). What differs from Redis 8.8: "" is a
  consumer XINFO CONSUMERS and the XPENDING summary list; XPENDING shows its idle as the
  time since the epoch, not -1; released entries are claimed by ID, not in the order they
  were released; a pending ID whose entry was deleted is left with its owner (not counted).
  XNACK is one script on every server (delivery.py): on a group with a delivery policy it is
  this emulation even on 8.8, with the release time as delivery time (the back-off counts
  from it) and the release recorded beside the policy (FIFO, the holder a dead letter names);
  without a policy, the server's XNACK where it has one.
- XADD IDMP / IDMPAUTO, XCFGSET, XIDMPRECORD (8.6.2): refused. A producer's iids would have
  to live beside the stream, expire by its entries' time and show in XINFO STREAM; 7.0's
  commands keep none of that with the stream, so no script does it exactly. A malformed
  IDMP XADD gets the engine's error (7.0 would say another).

What cannot be done exactly is refused with ``NotAvailable`` (400, as the error reply of that
server), naming the version needed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from app.backends.redis.delivery import nack_line
from app.backends.redis.features import IDMP, IDMP_RECORD, REF_POLICIES, Features
from app.backends.redis.limits import Bounded
from app.backends.redis.parse import (
    Arg,
    Raw,
    encode,
    id_arg,
    trim_args,
    xadd_args,
)
from app.backends.redis.scripts import (
    CLAIM_READ,
    TRIM_DELREF,
    XACKDEL,
    XDELEX,
    eval_keys,
)
from app.engine.clock import ManualClock
from app.engine.commands.deletes import parse_ids_block
from app.engine.commands.nack import NackArgs, parse_xnack
from app.engine.commands.read_claims import claiming
from app.engine.commands.reads import ReadRequest, parse_read_request, resolve_read
from app.engine.commands.streams import XAddArgs, parse_xadd
from app.engine.commands.table import Command
from app.engine.commands.xadd_options import parse_trim_options
from app.engine.consumer_groups import ConsumerGroup
from app.engine.errors import CommandError
from app.engine.ids import MIN_ID
from app.engine.keyspace import Keyspace
from app.engine.limits import Limits
from app.engine.refs import RefPolicy
from app.engine.stream import TrimSpec

Finish = Callable[[Raw], Raw]
CLAIM_POLL_MS = 250  # a blocked CLAIM read on an old server looks again at least this often


def script_finish(errors: dict[int, Callable[[Raw], CommandError]]) -> Finish:
    """A script's reply: ``{1, reply}`` is the command's; ``{code, ...}`` raises what
    ``errors`` makes of it."""

    def finish(raw: Raw) -> Raw:
        if isinstance(raw, list) and raw and raw[0] in errors:
            raise errors[raw[0]](raw)
        if isinstance(raw, list) and raw and raw[0] == 1:
            return raw[1] if len(raw) > 1 else None
        return raw

    return finish


def _raise(e: CommandError) -> Bounded:
    """A command refused before it is sent (sent as PING all the same: in a pipeline or a
    transaction every command keeps its place)."""

    def finish(_: Raw) -> Raw:
        raise e

    return Bounded(["PING"], finish)


# --- XDELEX / XACKDEL -----------------------------------------------------------------------
def deletes(
    key: str,
    group: str | None,
    policy: RefPolicy,
    ids: Sequence[Arg],
    option_error: CommandError | None = None,
    id_error: CommandError | None = None,
) -> Bounded:
    """XDELEX (``group`` None) or XACKDEL by script; the parser's errors answered where the
    command answers them (after WRONGTYPE; an invalid ID after a missing key's -1s)."""
    flags: list[Arg] = ["1" if option_error else "0", "1" if id_error else "0"]
    if group is None:
        line = eval_keys(XDELEX, [key], [policy.value, *flags, *ids])
    else:
        line = eval_keys(XACKDEL, [key], [encode(group), policy.value, *flags, *ids])
    errors: dict[int, Callable[[Raw], CommandError]] = {}
    if option_error is not None:
        errors[2] = lambda _: option_error
    if id_error is not None:
        errors[3] = lambda _: id_error
    return Bounded(line, script_finish(errors), writes=True)


def _deletes_command(args: list[str], group: bool) -> Bounded:
    key = args[1]
    start = 3 if group else 2
    try:
        block = parse_ids_block(args, start)
    except CommandError as e:
        return deletes(key, args[2] if group else None, RefPolicy.KEEPREF, [], option_error=e)
    id_error = None
    texts: list[Arg] = [encode(t) for t in block.texts]
    try:
        texts = [id_arg(i) for i in block.ids()]
    except CommandError as e:
        id_error = e
    return deletes(key, args[2] if group else None, block.policy, texts, id_error=id_error)


# --- XADD / XTRIM with a policy ---------------------------------------------------------------
def trim(features: Features, key: str, spec: TrimSpec, add: XAddArgs | None = None) -> Bounded:
    """XTRIM (``add`` None) or XADD ``add`` whose trim is ``spec``, on a server older than
    8.2: KEEPREF the plain command, DELREF by script, ACKED refused."""
    command = "XADD" if add is not None else "XTRIM"
    if spec.policy is RefPolicy.ACKED:
        return _raise(features.refuse(f"{command} with ACKED", REF_POLICIES))
    if spec.policy is RefPolicy.KEEPREF:
        if add is not None:
            return Bounded(["XADD", encode(key), *xadd_args(add)], _same, writes=True)
        return Bounded(["XTRIM", encode(key), *trim_args(spec, policy=False)], _same, True)
    limit = features.default_limit if spec.limit < 0 else spec.limit
    node = features.node_entries[1] if features.node_entries is not None else 0
    if spec.approx and not (features.node_entries and node > 0):
        return _raise(features.refuse(f"{command} with DELREF and ~", REF_POLICIES))
    threshold: Arg = spec.maxlen if spec.strategy.value == "MAXLEN" else id_arg(spec.minid)
    words: list[Arg] = [
        "xadd" if add is not None else "xtrim",
        spec.strategy.value,
        threshold,
        limit if spec.approx else 0,
        node,
    ]
    if add is not None:
        words += xadd_args(add, trim=False)
    refused = features.refuse(f"{command} with DELREF and ~ past its LIMIT", REF_POLICIES)
    line = eval_keys(TRIM_DELREF, [key], words)
    return Bounded(line, script_finish({4: lambda _: refused}), writes=True)


def _same(raw: Raw) -> Raw:
    return raw


def _scratch(features: Features) -> Keyspace:
    """A keyspace for the engine's parsers: this host's clock, the server's node size (the
    default LIMIT of ``~``)."""
    ks = Keyspace(ManualClock(int(time.time() * 1000)))
    if features.node_entries is not None:
        ks.config.node_max_entries = features.node_entries[0]
    return ks


_POLICY_WORDS = frozenset(p.value.lower() for p in RefPolicy)


def _add_or_trim_command(features: Features, args: list[str], xadd: bool) -> Bounded | None:
    """XADD / XTRIM naming a policy (None: it names none, the command goes as it is)."""
    ks = _scratch(features)
    try:
        if xadd:
            add = parse_xadd(ks, args)
            end = parse_trim_options(ks, args, xadd=True).end
            spec = add.trim
        else:
            add = None
            end = len(args)
            spec = parse_trim_options(ks, args, xadd=False).trim
    except CommandError as e:
        if any(a.lower() in _POLICY_WORDS for a in args[2:]):
            return _raise(e)  # the engine's error: 7.0 knows no policy and would say another
        return None
    if not any(a.lower() in _POLICY_WORDS for a in args[2:end]):
        return None
    if spec is None:  # XADD naming a policy and no trim: nothing to trim
        assert add is not None
        return Bounded(["XADD", encode(args[1]), *xadd_args(add)], _same, writes=True)
    return trim(features, args[1], spec, add)


# --- XADD IDMP / IDMPAUTO, XCFGSET -------------------------------------------------------------
_IDMP_WORDS = frozenset(("idmp", "idmpauto"))


def idmp_refusal(features: Features, add: XAddArgs) -> CommandError:
    """The error for an IDMP append on a server older than 8.6, naming the option given."""
    word = "IDMPAUTO" if add.idmp is not None and add.idmp.iid is None else "IDMP"
    return features.refuse(f"XADD with {word}", IDMP)


def _idmp_command(features: Features, args: list[str]) -> Bounded | None:
    """XADD naming IDMP / IDMPAUTO on a server older than 8.6: refused (None: it names
    neither, and goes on as any XADD)."""
    if not any(a.lower() in _IDMP_WORDS for a in args[2:]):
        return None
    try:
        add = parse_xadd(_scratch(features), args)
    except CommandError as e:
        return _raise(e)  # the engine's error: 7.0 knows no IDMP and would say another
    if add.idmp is None:
        return None
    return _raise(idmp_refusal(features, add))


# --- XNACK --------------------------------------------------------------------------------
def nack(a: NackArgs, native: bool = False) -> Bounded:
    """XNACK by script (see this module's docstring): the server's own XNACK (``native``)
    for a group without a delivery policy, else the emulation (delivery.py)."""
    return Bounded(nack_line(a, native), _same, writes=True)


# --- XREADGROUP ... CLAIM -----------------------------------------------------------------------
def claim_id_errors(r: ReadRequest) -> list[CommandError | None]:
    """The error each key's ID gets from the engine (``$``, a malformed ID), answered by the
    script after that key's NOGROUP, as the engine answers them key by key."""
    assert r.group is not None
    out: list[CommandError | None] = []
    for key, text in zip(r.keys, r.ids, strict=True):
        ks = Keyspace(ManualClock(0))
        ks.create(key).groups[r.group] = ConsumerGroup(r.group, MIN_ID, None)
        try:
            resolve_read(ks, dataclasses.replace(r, keys=[key], ids=[text], block_ms=None))
            out.append(None)
        except CommandError as e:
            out.append(e)
    return out


def claim_read(
    limits: Limits,
    r: ReadRequest,
    keys: list[str],
    ids: list[str],
    errors: list[CommandError | None],
    claims: list[bool],
    mode: str = "read",
    waiting: bool = False,
) -> Bounded:
    """The CLAIM read of ``keys`` (one slot) by script; ``mode`` 'check': only its errors.
    ``claims``: which keys claim (``claiming``, over the whole request's IDs); the other
    ``>`` keys are read as without CLAIM.
    ``finish`` gives the read's reply (delivery counts as integers); with ``waiting``, when
    nothing was there, ``[None, ms]``: when the next pending entry turns idle enough (-1:
    none pending), for a blocked read."""
    assert r.group is not None and r.consumer is not None and r.claim_ms is not None
    cap = limits.reply_cap(r.count, len(r.keys))
    words: list[Arg] = [
        mode,
        encode(r.group),
        encode(r.consumer),
        r.claim_ms,
        r.count if r.count < 2**53 else 0,  # a Lua number; no stream holds that many
        "1" if r.noack else "0",
        limits.group_consumers,
        cap or 0,
        *map(encode, ids),
        *("1" if e else "0" for e in errors),
        *("1" if c else "0" for c in claims),
    ]
    group = r.group

    def finish(raw: Raw) -> Raw:
        code = raw[0]
        if code == 0:
            raise limits.too_large(r.command)
        if code == 5:
            raise limits.too_many_consumers(group)
        if code == 3:
            error = errors[int(raw[1]) - 1]
            assert error is not None
            raise error
        if len(raw) > 2:
            return [None, int(raw[2])] if waiting else None
        return claimed_counts(raw[1]) if len(raw) > 1 else None

    return Bounded(eval_keys(CLAIM_READ, keys, words), finish, writes=mode == "read")


def claimed_counts(reply: Raw) -> Raw:
    """A CLAIM read's reply from the script: the delivery counts came as text (a Lua number
    cannot hold 9223372036854775807), as integers again."""
    if not reply:
        return None
    for _, rows in reply:
        for row in rows:
            if len(row) == 4:
                row[3] = int(row[3])
    return reply


def as_claimed(reply: Raw) -> Raw:
    """New entries a plain XREADGROUP delivered, in a CLAIM read's shape (idle 0, count 0)."""
    if reply is None:
        return None
    return [[key, [[e[0], e[1], 0, 0] for e in rows]] for key, rows in reply]


def _claim_command(limits: Limits, args: list[str]) -> Bounded | None:
    """XREADGROUP with CLAIM as one command of a pipeline or a transaction (never blocking:
    a blocking one goes on its own, and inside MULTI Redis answers at once)."""
    try:
        r = parse_read_request(Keyspace(ManualClock(int(time.time() * 1000))), args)
    except CommandError as e:
        return _raise(e)
    if r.group is None or r.claim_ms is None:
        return None
    try:
        limits.check_read_keys(r.command, len(r.keys))
    except CommandError as e:
        return _raise(e)
    claims = claiming(text == ">" for text in r.ids)
    return claim_read(limits, r, list(r.keys), list(r.ids), claim_id_errors(r), claims)


# --- raw commands -----------------------------------------------------------------------------
def older(features: Features, limits: Limits, cmd: Command, args: list[str]) -> Bounded | None:
    """How a command of the command endpoint goes to a server that lacks it (None: as it
    is, because the server has it or it names nothing newer)."""
    name = cmd.name
    if name == "xcfgset" and not features.idmp:
        return _raise(features.refuse("XCFGSET", IDMP))
    if name == "xidmprecord" and not features.has(IDMP_RECORD):
        return _raise(features.refuse("XIDMPRECORD", IDMP_RECORD))
    if name == "xadd" and not features.idmp:
        refused = _idmp_command(features, args)
        if refused is not None:
            return refused
    if name in ("xdelex", "xackdel"):
        return None if features.ref_policies else _deletes_command(args, name == "xackdel")
    if name in ("xadd", "xtrim"):
        return (
            None if features.ref_policies else _add_or_trim_command(features, args, name == "xadd")
        )
    if name == "xnack":
        try:
            return nack(parse_xnack(args), features.xnack)
        except CommandError as e:
            return None if features.xnack else _raise(e)
    if name in ("xread", "xreadgroup") and not features.read_claim and names_claim(args):
        return _claim_command(limits, args)
    return None


def names_claim(args: list[str]) -> bool:
    """Whether XREAD / XREADGROUP names CLAIM among its options: a server older than 8.4
    would answer a syntax error where the engine's parser says what is wrong."""
    for a in args[1:]:
        low = a.lower()
        if low == "streams":
            return False
        if low == "claim":
            return True
    return False
