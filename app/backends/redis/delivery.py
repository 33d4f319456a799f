"""Delivery policies and retention on Redis (app/engine/delivery.py defines the rules).

- A group's policy lives in a hash in its stream's slot (``policy_key``): the policy, its
  counters and the releases XNACK made (policy_scripts.py). Every read of new entries by a
  group (XREADGROUP with a ``>`` and no CLAIM: REST, SSE, the command endpoint, alone, in a
  pipeline or a transaction) is one script (``gated_read``) that looks the group's policy up
  and, when there is none, runs what would have been sent anyway (the plain XREADGROUP, or
  the limit script inlined): a group without a policy costs one HGET per stream inside the
  script it already needed, and a policy set through any front-end applies to the next read
  on every other. With a policy, the same script serves the due pending entries (claims and
  dead letters, each move atomic with the reading of the policy) before new entries.
- A blocked read with a policy (reads.py) runs the script, then a plain blocking
  XREADGROUP for at most the time to the next due entry (``POLICY_POLL_MS`` at most, so an
  XNACK elsewhere is seen), then the script again, as newer.py's CLAIM reads do.
- XNACK under a policy (policy_scripts.XNACK) is the emulation of newer.py on every server,
  with the release time as delivery time; without one, the server's XNACK or the emulation.
- Redis Cluster: the dead-letter stream must be in the stream's slot (a script reaches one
  slot only), and so must a redrive's target be in the dead-letter stream's.
- A dead-letter chain (app/engine/dead_letters.py) is walked by the script that sets the
  policy, so the walk and the write are one atomic step: two front-ends closing a cycle at
  once are serialized by Redis, and the second is refused. The script cannot name a policy
  hash itself (its tag comes from the slot), so it answers the streams of the chain it was
  not given and is sent again with them. On a cluster every link shares the stream's slot,
  so the whole chain is on one node.
- Retention: one hash by stream name (``RETENTION_KEY``); a step is one script on the
  stream, by the server's clock (TIME).
- The policy goes with its group or stream when xstreams removes them (REST, or DEL, UNLINK,
  XGROUP DESTROY through the command endpoint: ``forget``); FLUSHDB removes everything.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redis.crc import key_slot
from redis.exceptions import ResponseError

from app.backends.redis.features import REF_POLICIES
from app.backends.redis.idempotent import attempt, slot_tag
from app.backends.redis.limits import Bounded
from app.backends.redis.lua import Reply
from app.backends.redis.parse import Arg, Raw, decode, encode, id_arg, parse_id, redis_error
from app.backends.redis.policy_scripts import (
    FORGET_GROUP,
    POLICY,
    REDRIVE,
    RETENTION,
    XNACK,
    policy_read_script,
)
from app.backends.redis.routing import Router
from app.backends.redis.scripts import eval_line
from app.engine.commands.groups import no_such_group
from app.engine.commands.nack import NackArgs
from app.engine.commands.reads import ReadRequest
from app.engine.dead_letters import dead_letter_cycle
from app.engine.delivery import (
    MAX_REDRIVE,
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    split_dead_letter,
)
from app.engine.errors import CommandError, NoSuchKey, WrongArgument
from app.engine.ids import StreamID
from app.engine.limits import Limits
from app.engine.refpolicy import RefPolicy

POLICY_POLL_MS = 250  # a blocked policy read looks again at least this often
RETENTION_KEY = "xs:retention"
POLICY_PREFIX = "xs:dp:"
SAME_SLOT = "dead_letter_stream must be in the same hash slot as the stream (use a hash tag)"
REDRIVE_SLOT = (
    "ERR a redrive target must be in the same hash slot as the dead-letter stream (use a hash tag)"
)
_BATCH = 100  # entries one redrive script moves

# Reply tags of the read script (policy_scripts.POLICY_READ_BODY).
FALLBACK, NO_POLICY, POLICY_READ = 10, 11, 12


@functools.lru_cache(maxsize=4096)
def policy_key(stream: str) -> str:
    """The hash holding the policies of ``stream``'s groups, in its slot (the tag is the
    first ``{...}`` of the name, so the stream's own name never changes the slot)."""
    return f"{POLICY_PREFIX}{{{slot_tag(key_slot(encode(stream)))}}}:{stream}"


def _stream_of(pkey: str) -> str:
    return pkey.split("}:", 1)[1]


def applies(r: ReadRequest) -> bool:
    """Whether a read may be served by a policy: XREADGROUP with a ``>`` and no CLAIM."""
    return r.group is not None and r.claim_ms is None and ">" in r.ids


_SCRIPTS: dict[str | None, str] = {}


def _script(source: str | None) -> str:
    script = _SCRIPTS.get(source)
    if script is None:
        script = _SCRIPTS[source] = policy_read_script(source)
    return script


@dataclass(frozen=True, slots=True)
class Gated:
    """A group read as one script: ``line``; ``finish`` gives the read's reply; with
    ``waiting``, [None, ms] when a policy read found nothing (ms: to the next due entry)."""

    line: list[Arg]
    finish: Callable[[Raw], Raw]
    policy: Callable[[Raw], bool]  # whether a reply came from the policy path


def gated_read(
    limits: Limits,
    r: ReadRequest,
    keys: list[str],
    ids: list[str],
    errors: Sequence[CommandError | None],
    fallback: Bounded | list[Arg] | None,
    mode: str = "read",
    waiting: bool = False,
) -> Gated:
    """The read of ``keys`` (one slot) with their policies first. ``fallback``: what goes
    when none has one (a command, or a Bounded whose line is a script: inlined); None: the
    script answers ``NO_POLICY`` and does nothing then."""
    assert r.group is not None and r.consumer is not None
    cap = limits.reply_cap(r.count, len(r.keys))
    kind, fkeys, fargs, source = "", [], [], None
    ffinish: Callable[[Raw], Raw] = _same
    if isinstance(fallback, Bounded):
        ffinish = fallback.finish
        fallback = fallback.line
    if fallback is not None:
        if str(fallback[0]).upper() == "EVAL":
            kind = "s"
            source = str(fallback[1])
            nk = int(fallback[2])
            fkeys, fargs = list(fallback[3 : 3 + nk]), list(fallback[3 + nk :])
        else:
            kind, fargs = "c", list(fallback)
    words: list[Arg] = [
        len(keys),
        mode,
        encode(r.group),
        encode(r.consumer),
        r.count if r.count < 2**53 else 0,
        "1" if r.noack else "0",
        limits.group_consumers,
        cap or 0,
        kind,
        len(fkeys),
        *map(encode, ids),
        *("1" if e else "0" for e in errors),
        *fargs,
    ]
    all_keys: list[Arg] = [*map(encode, keys), *(encode(policy_key(k)) for k in keys), *fkeys]
    line = eval_line(_script(source), all_keys, words)
    group = r.group

    def finish(raw: Raw) -> Raw:
        tag = raw[0]
        if tag == FALLBACK:
            return ffinish(raw[1] if len(raw) > 1 else None)
        if tag == NO_POLICY:
            return None
        code = raw[1]
        if code == 0:
            raise limits.too_large(r.command)
        if code == 5:
            raise limits.too_many_consumers(group)
        if code == 3:
            error = errors[int(raw[2]) - 1]
            assert error is not None
            raise error
        if len(raw) > 3:
            return [None, int(raw[3])] if waiting else None
        return raw[2] if len(raw) > 2 else None

    def policy(raw: Raw) -> bool:
        return bool(raw) and raw[0] == POLICY_READ

    return Gated(line, finish, policy)


def _pairs(raw: Raw) -> dict[str, Raw]:
    """HGETALL's reply (redis-py gives a dict; a flat list in a script's reply)."""
    if isinstance(raw, dict):
        return {decode(k): v for k, v in raw.items()}
    return {decode(raw[i]): raw[i + 1] for i in range(0, len(raw or []), 2)}


def _same(raw: Raw) -> Raw:
    return raw


_SHAS: dict[str, str] = {}


async def send_script(router: Router, key: str, line: list[Arg]) -> Raw:
    """An EVAL ``line`` (a write) as EVALSHA, so the script's text crosses the wire once
    per server; EVAL when the server does not have it yet (NOSCRIPT), or inside an
    idempotent request (whose lines are composed into one script)."""
    if attempt() is not None:
        return await router.write(key, *line)
    source = line[1]
    assert isinstance(source, str)
    sha = _SHAS.get(source)
    if sha is None:
        sha = _SHAS[source] = hashlib.sha1(source.encode()).hexdigest()
    try:
        return await router.write(key, "EVALSHA", sha, *line[2:])
    except CommandError as e:
        if not str(e).startswith("NOSCRIPT"):
            raise
    return await router.write(key, *line)


def nack_line(a: NackArgs, native: bool) -> list[Arg]:
    """XNACK as one script on every server (policy_scripts.XNACK)."""
    retry: Arg = "" if a.retry_count is None else str(a.retry_count)
    words: list[Arg] = [encode(a.group), a.mode.value, retry, "1" if a.force else "0"]
    words += ["1" if native else "0", *map(id_arg, a.ids)]
    return eval_line(XNACK, [encode(a.key), encode(policy_key(a.key))], words)


def forget_lines(name: str, args: Sequence[str]) -> list[tuple[str, list[Arg]]]:
    """What a command of the command endpoint that removed streams or a group leaves to
    remove of their policies (routed by the key given first)."""
    if name in ("del", "unlink"):
        return [(k, ["DEL", encode(policy_key(k))]) for k in args[1:]]
    if name == "xgroup|destroy" and len(args) == 4:
        pkey = encode(policy_key(args[2]))
        return [(args[2], eval_line(FORGET_GROUP, [pkey], [encode(args[3])]))]
    return []


class RedisDelivery:
    """Policies, redrive, retention and their counters, on ``_router``. A part of
    ``RedisBackend``, which sets it; the webhooks and the command endpoint build on it."""

    _router: Router

    # --- policies -------------------------------------------------------------------
    async def _policy(
        self, key: str, group: str, what: str, value: str = "", chain: Sequence[str] = ()
    ) -> Raw:
        keys = [encode(key), encode(policy_key(key))]
        words: list[Arg] = [encode(group), what, value]
        for name in chain:
            if self._router.cluster and key_slot(encode(name)) != key_slot(encode(key)):
                words.append(encode(name))  # no chain leaves a slot: no policy there to follow
            else:
                keys += [encode(name), encode(policy_key(name))]
        line = eval_line(POLICY, keys, words)
        if what == "set":
            return await self._router.write(key, *line)
        return await self._router.call(key, *line)

    async def delivery_policy(self, key: str, group: str) -> DeliveryPolicy | None:
        raw = await self._policy(key, group, "get")
        if raw[0] == Reply.NO_GROUP:
            raise no_such_group(key, group)
        return None if raw[1] is None else DeliveryPolicy.from_json(json.loads(raw[1]))

    async def delivery_policies(self, key: str) -> dict[str, DeliveryPolicy]:
        raw = await self._policy(key, "", "all")
        pairs = raw[1]
        return {
            decode(pairs[i]): DeliveryPolicy.from_json(json.loads(pairs[i + 1]))
            for i in range(0, len(pairs), 2)
        }

    async def set_delivery_policy(
        self, key: str, group: str, policy: DeliveryPolicy | None
    ) -> bool:
        value = ""
        if policy is not None:
            policy.check_for(key)
            dead = policy.dead_letter_stream
            cluster = self._router.cluster
            if dead is not None and cluster and key_slot(encode(dead)) != key_slot(encode(key)):
                raise WrongArgument.err(SAME_SLOT)
            value = json.dumps(policy.as_json(), separators=(",", ":"))
        # The script walks the dead-letter chain and sets the policy in one atomic step; it
        # names the streams of the chain it was not given, and is sent again with them.
        chain: list[str] = []
        while True:
            raw = await self._policy(key, group, "set", value, chain)
            if raw[0] != Reply.ASK_AGAIN:
                break
            more = [name for name in map(decode, raw[1:]) if name not in chain]
            assert more, "the policy script asked again for the streams it was given"
            chain += more
        if raw[0] == Reply.NO_GROUP:
            raise no_such_group(key, group)
        if raw[0] == Reply.CYCLE:
            assert policy is not None and policy.dead_letter_stream is not None
            raise dead_letter_cycle(key, policy.dead_letter_stream)
        return bool(raw[1])

    async def forget_stream(self, key: str) -> None:
        await self._router.write(key, "DEL", encode(policy_key(key)))

    async def forget_group(self, key: str, group: str) -> None:
        for route, line in forget_lines("xgroup|destroy", ["XGROUP", "DESTROY", key, group]):
            await self._router.write(route, *line)

    async def forget(self, name: str, args: Sequence[str]) -> None:
        """After DEL, UNLINK or XGROUP DESTROY of the command endpoint ran."""
        for route, line in forget_lines(name, args):
            await self._router.write(route, *line)

    async def delivery_stats(self) -> list[DeliveryStats]:
        out: list[DeliveryStats] = []
        for pkey in await self._policy_keys():
            stream = _stream_of(pkey)
            policies = await self.delivery_policies(stream)  # of the groups still there
            if not policies:
                continue
            fields = _pairs(await self._router.call(stream, "HGETALL", encode(pkey)))
            for group, policy in sorted(policies.items()):
                dead = policy.dead_letter_stream
                length = None
                if dead is not None:
                    kind = decode(await self._router.call(dead, "TYPE", encode(dead)))
                    if kind == "stream":
                        length = int(await self._router.call(dead, "XLEN", encode(dead)))
                out.append(
                    DeliveryStats(
                        stream,
                        group,
                        int(fields.get("r:" + group, 0)),
                        int(fields.get("d:" + group, 0)),
                        dead,
                        length,
                    )
                )
        return out

    async def policy_streams(self) -> list[str]:
        """The streams that have a policy hash (a policy, its counters, webhooks)."""
        return [_stream_of(pkey) for pkey in await self._policy_keys()]

    async def _policy_keys(self) -> list[str]:
        options: list[Arg] = ["MATCH", POLICY_PREFIX + "*", "COUNT", 1000, "TYPE", "hash"]
        keys: list[str] = []
        cursor = "0"
        while True:
            if self._router.cluster:
                nxt, found = await self._router.cluster_scan(cursor, options)
            else:
                nxt, found = await self._router.call(None, "SCAN", cursor, *options)
            keys += [decode(k) for k in found]
            cursor = decode(nxt) if isinstance(nxt, bytes) else str(nxt)
            if cursor == "0":
                return sorted(set(keys))

    # --- redrive --------------------------------------------------------------------
    async def redrive(self, args: RedriveArgs) -> Redriven:
        router, dead = self._router, args.key
        kind = decode(await router.call(dead, "TYPE", encode(dead)))
        if kind == "none":
            raise NoSuchKey()
        if args.ids is None:
            count = max(0, min(args.count, MAX_REDRIVE))
            rows = await router.call(dead, "XRANGE", encode(dead), "-", "+", "COUNT", count)
            wanted = [parse_id(r[0]) for r in rows]
            found = {parse_id(r[0]): r[1] for r in rows}
        else:
            wanted = list(args.ids)
            unique = list(dict.fromkeys(wanted))
            lines: list[tuple[str, list[Arg]]] = [
                (dead, ["XRANGE", encode(dead), id_arg(sid), id_arg(sid)]) for sid in unique
            ]
            found = {}
            for sid, got in zip(unique, await router.pipelined(lines), strict=True):
                if isinstance(got, ResponseError):
                    raise redis_error(got)
                if isinstance(got, Exception):  # RedisUnavailable
                    raise got
                if got:
                    found[sid] = got[0][1]
        plan: list[tuple[StreamID, str | None]] = []
        for sid in wanted:
            fields = found.get(sid)
            split = None
            if fields is not None:
                split = split_dead_letter(tuple(decode(f) for f in fields))
            if split is None or not split[0]:
                plan.append((sid, None))
                continue
            target = args.target if args.target is not None else split[1].stream
            if router.cluster and key_slot(encode(target)) != key_slot(encode(dead)):
                raise WrongArgument(REDRIVE_SLOT)
            plan.append((sid, target))
        moved: list[tuple[StreamID, str, StreamID]] = []
        skipped: list[StreamID] = []
        for start in range(0, len(plan), _BATCH):
            batch = plan[start : start + _BATCH]
            targets: list[str] = []
            words: list[Arg] = []
            for sid, dest in batch:
                if dest is None:
                    continue
                if dest not in targets:
                    targets.append(dest)
                words += [id_arg(sid), targets.index(dest) + 2]
            replies: list[Raw] = []
            if words:
                line = eval_line(REDRIVE, [encode(dead), *map(encode, targets)], words)
                replies = list(await router.write(dead, *line))
            for sid, dest in batch:
                if dest is None:
                    skipped.append(sid)
                    continue
                new = replies.pop(0)
                if new is None:
                    skipped.append(sid)
                else:
                    moved.append((sid, dest, parse_id(new)))
        return Redriven(moved, skipped)

    # --- retention ------------------------------------------------------------------
    async def retention(self, key: str) -> Retention | None:
        raw = await self._router.call(RETENTION_KEY, "HGET", RETENTION_KEY, encode(key))
        return None if raw is None else Retention.from_json(json.loads(raw))

    async def set_retention(self, key: str, retention: Retention | None) -> bool:
        if retention is None:
            return bool(await self._router.write(RETENTION_KEY, "HDEL", RETENTION_KEY, encode(key)))
        if retention.policy is not RefPolicy.KEEPREF:
            features = await self._router.server_features()
            if not features.ref_policies:
                raise features.refuse(f"retention with {retention.policy.value}", REF_POLICIES)
        value = json.dumps(retention.as_json(), separators=(",", ":"))
        added = await self._router.write(RETENTION_KEY, "HSET", RETENTION_KEY, encode(key), value)
        return not int(added)

    async def retentions(self) -> dict[str, Retention]:
        raw = await self._router.call(RETENTION_KEY, "HGETALL", RETENTION_KEY)
        return {name: Retention.from_json(json.loads(v)) for name, v in _pairs(raw).items()}

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        def opt(v: int | None) -> Arg:
            return "" if v is None else v

        words: list[Arg] = [
            opt(retention.max_age_ms),
            opt(retention.max_len),
            opt(retention.max_bytes),
            limit,
            "" if retention.policy is RefPolicy.KEEPREF else retention.policy.value,
        ]
        line = eval_line(RETENTION, [encode(key)], words)
        return int(await self._router.write(key, *line))
