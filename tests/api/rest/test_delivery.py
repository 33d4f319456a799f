"""Delivery policies, redrive and retention over REST (issue 27), on the three targets.

Names carry a hash tag (``{o}``, ``{o}:dead``) so the dead-letter stream shares the stream's
slot on Redis Cluster, as the policy requires there."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest

from app.engine.delivery import DEAD_LETTER_FIELDS, MAX_POLICY_MS
from tests.api.rest.conftest import add, problem
from tests.conftest import Commands
from tests.support.targets import CLUSTER, Target
from tests.support.waiting import until

S, DEAD, OTHER = "{o}", "{o}:dead", "{o}:retry"
LLONG_MAX = 9223372036854775807
NONE = {"visibility_timeout_ms": None, "max_deliveries": None, "dead_letter_stream": None,
        "backoff_ms": None}  # fmt: skip


def url(stream: str) -> str:
    return "/v1/streams/" + quote(stream, safe="")


G = url(S) + "/groups/g"


def policy(**parts: Any) -> dict[str, Any]:
    """A policy as the service shows it: every part, null when not set."""
    return {**NONE, **parts}


def stream(api: httpx.Client, n: int = 3, group: str = "g") -> None:
    for i in range(1, n + 1):
        add(api, S, ("n", str(i)), id=f"{i}-0")
    r = api.post(url(S) + "/groups", json={"name": group, "id": "0"})
    assert r.status_code == 201, r.text


def read(api: httpx.Client, consumer: str, **body: Any) -> list[str]:
    r = api.post(f"{G}/consumers/{consumer}/reads", json=body)
    assert r.status_code == 200, r.text
    return [e["id"] for e in r.json()["entries"]]


def nack(api: httpx.Client, mode: str, *ids: str) -> None:
    r = api.post(f"{G}/nacks", json={"ids": list(ids), "mode": mode})
    assert r.status_code == 200 and r.json() == {"released": len(ids)}, r.text


def pairs(api: httpx.Client, stream: str) -> list[tuple[str, list[list[str]]]]:
    r = api.get(url(stream) + "/entries", params={"fields": "pairs"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [(e["id"], e["fields"]) for e in r.json()["entries"]]


def dead_letter(api: httpx.Client) -> None:
    """Entries 1-0 (XNACK FAIL, then due: max_deliveries 1) and 2-0 (XNACK FATAL) moved to
    the dead-letter stream by the next read; 3-0 stays pending."""
    stream(api)
    assert api.put(f"{G}/policy", json={"max_deliveries": 1, "dead_letter_stream": DEAD}).is_success
    assert read(api, "a", count=3) == ["1-0", "2-0", "3-0"]
    nack(api, "FAIL", "1-0")
    nack(api, "FATAL", "2-0")
    assert read(api, "b", count=10) == []  # both dead-lettered, nothing new


# --- the policy resource ---------------------------------------------------------------


def test_a_policy_is_set_read_shown_with_the_group_and_removed(api: httpx.Client) -> None:
    stream(api)
    api.post(url(S) + "/groups", json={"name": "h", "id": "0"})
    body = {"visibility_timeout_ms": 30000, "max_deliveries": 5, "dead_letter_stream": DEAD,
            "backoff_ms": [1000, 5000]}  # fmt: skip
    r = api.put(f"{G}/policy", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == body
    assert api.get(f"{G}/policy").json() == body
    assert api.get(G).json()["policy"] == body
    groups = api.get(url(S) + "/groups").json()["groups"]
    assert {g["name"]: g["policy"] for g in groups} == {"g": body, "h": None}
    # Replaced whole: a part left out is not set any more.
    assert api.put(f"{G}/policy", json={"visibility_timeout_ms": 10}).json() == policy(
        visibility_timeout_ms=10
    )
    assert api.get(f"{G}/policy").json() == policy(visibility_timeout_ms=10)
    assert api.delete(f"{G}/policy").status_code == 204
    assert api.get(G).json()["policy"] is None
    problem(api.get(f"{G}/policy"), 404, "ERR")
    problem(api.delete(f"{G}/policy"), 404, "ERR")  # removing it again


def test_the_policy_goes_with_its_group(api: httpx.Client) -> None:
    stream(api)
    assert api.put(f"{G}/policy", json={"visibility_timeout_ms": 10}).status_code == 200
    assert api.delete(G).status_code == 204
    api.post(url(S) + "/groups", json={"name": "g", "id": "0"})
    problem(api.get(f"{G}/policy"), 404)
    assert api.get(G).json()["policy"] is None


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_missing_group_or_stream_is_nogroup(api: httpx.Client, method: str) -> None:
    body = {"visibility_timeout_ms": 10} if method == "PUT" else None
    problem(api.request(method, f"{G}/policy", json=body), 404, "NOGROUP")
    stream(api)
    missing = url(S) + "/groups/nope/policy"
    problem(api.request(method, missing, json=body), 404, "NOGROUP")


ANOTHER = "another stream than the group's"


def out_of_range(part: str, low: int) -> str:
    return f"ERR {part} must be an integer from {low} to {MAX_POLICY_MS}"


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"max_deliveries": 3}, "ERR max_deliveries needs a dead_letter_stream"),
        ({"visibility_timeout_ms": 0}, out_of_range("visibility_timeout_ms", 1)),
        ({"max_deliveries": 0, "dead_letter_stream": DEAD}, out_of_range("max_deliveries", 1)),
        ({"backoff_ms": [-1]}, out_of_range("each backoff_ms step", 0)),
        ({"backoff_ms": [1] * 33}, "ERR backoff_ms takes at most 32 steps"),
        ({"dead_letter_stream": S}, f"ERR dead_letter_stream must be {ANOTHER}"),
    ],
)  # fmt: skip
def test_a_policy_out_of_range_is_a_400_with_the_rules_text(
    api: httpx.Client, body: dict[str, Any], text: str
) -> None:
    stream(api)
    assert problem(api.put(f"{G}/policy", json=body), 400)["error"] == text
    problem(api.get(f"{G}/policy"), 404)  # nothing was set


@pytest.mark.parametrize(
    "body",
    [
        {"max_deliveries": True},
        {"visibility_timeout_ms": "10"},
        {"retries": 3},
        {"dead_letter_stream": ""},
        [],
    ],
)
def test_a_malformed_policy_is_a_422(api: httpx.Client, body: Any) -> None:
    stream(api)
    problem(api.put(f"{G}/policy", json=body), 422)


def test_a_policy_out_of_range_on_a_missing_group_is_the_groups_404(api: httpx.Client) -> None:
    problem(api.put(f"{G}/policy", json={"visibility_timeout_ms": 0}), 404, "NOGROUP")


def test_a_dead_letter_stream_must_share_the_slot_on_a_cluster(
    api: httpx.Client, target: Target
) -> None:
    stream(api)
    r = api.put(f"{G}/policy", json={"max_deliveries": 2, "dead_letter_stream": "dead"})
    if target.name == CLUSTER:
        assert "hash slot" in problem(r, 400)["error"]
    else:
        assert r.status_code == 200, r.text


# --- redelivery, dead letters and redrive ----------------------------------------------


def test_a_released_entry_comes_back_to_the_next_reader_then_goes_dead(
    api: httpx.Client,
) -> None:
    stream(api, 1)
    body = {"max_deliveries": 2, "dead_letter_stream": DEAD}
    assert api.put(f"{G}/policy", json=body).status_code == 200
    assert read(api, "a") == ["1-0"]
    nack(api, "FAIL", "1-0")
    assert read(api, "b") == ["1-0"]  # claimed by the policy: a second delivery
    row = api.get(f"{G}/pending", params={"count": 10}).json()["entries"][0]
    assert (row["consumer"], row["delivery_count"]) == ("b", 2)
    nack(api, "FAIL", "1-0")
    assert read(api, "c") == []  # delivered twice already: dead-lettered instead
    [(_, fields)] = pairs(api, DEAD)
    assert dict(map(tuple, fields))["xs-dl-deliveries"] == "2"
    assert metric(api, "xstreams_redelivered_total") == 1
    assert metric(api, "xstreams_dead_lettered_total") == 1


def test_an_entry_pending_past_the_visibility_timeout_goes_to_the_next_reader(
    api: httpx.Client,
) -> None:
    stream(api, 1)
    assert api.put(f"{G}/policy", json={"visibility_timeout_ms": 1}).status_code == 200
    assert read(api, "a") == ["1-0"]
    until(lambda: read(api, "b") == ["1-0"], 10, "a claim past the visibility timeout")
    row = api.get(f"{G}/pending", params={"count": 10}).json()["entries"][0]
    assert (row["consumer"], row["delivery_count"]) == ("b", 2)


# --- dead letters and redrive ----------------------------------------------------------


def test_dead_letters_keep_their_fields_and_name_their_origin(api: httpx.Client) -> None:
    dead_letter(api)
    rows = pairs(api, DEAD)
    assert len(rows) == 2
    origins = []
    for _, fields in rows:
        assert [f[0] for f in fields] == ["n", *DEAD_LETTER_FIELDS]
        origins.append({k: v for k, v in fields})
    assert [(o["n"], o["xs-dl-stream"], o["xs-dl-id"], o["xs-dl-group"]) for o in origins] == [
        ("1", S, "1-0", "g"),
        ("2", S, "2-0", "g"),
    ]
    assert [(o["xs-dl-deliveries"], o["xs-dl-reason"]) for o in origins] == [
        ("1", "max_deliveries"),
        (str(LLONG_MAX), "fatal"),
    ]
    # Acknowledged in the group: only 3-0 is pending.
    r = api.get(f"{G}/pending", params={"count": 10})
    assert [e["id"] for e in r.json()["entries"]] == ["3-0"]


def test_redrive_moves_every_entry_back_to_its_origin_once(api: httpx.Client) -> None:
    dead_letter(api)
    dead_ids = [i for i, _ in pairs(api, DEAD)]
    r = api.post(url(DEAD) + "/redrive", json={})
    assert r.status_code == 200, r.text
    moved = r.json()["moved"]
    assert [m["id"] for m in moved] == dead_ids and r.json()["skipped"] == []
    assert {m["stream"] for m in moved} == {S}
    back = pairs(api, S)[-2:]
    assert [i for i, _ in back] == [m["new_id"] for m in moved]
    assert [f for _, f in back] == [[["n", "1"]], [["n", "2"]]]  # the original fields only
    assert pairs(api, DEAD) == []
    # A retry of the same redrive (by IDs) finds them gone: skipped, nothing moved twice.
    again = api.post(url(DEAD) + "/redrive", json={"ids": dead_ids}).json()
    assert again == {"moved": [], "skipped": dead_ids}
    assert len(pairs(api, S)) == 5


def test_redrive_by_ids_to_another_stream_skips_what_is_no_dead_letter(
    api: httpx.Client,
) -> None:
    dead_letter(api)
    first, second = [i for i, _ in pairs(api, DEAD)]
    plain = add(api, DEAD, ("x", "1"))  # not written by a policy: never moved
    body = {"ids": [second, plain, "9999-0"], "to": OTHER}
    r = api.post(url(DEAD) + "/redrive", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert [(m["id"], m["stream"]) for m in got["moved"]] == [(second, OTHER)]
    assert got["skipped"] == [plain, "9999-0"]
    assert [f for _, f in pairs(api, OTHER)] == [[["n", "2"]]]
    assert [i for i, _ in pairs(api, DEAD)] == [first, plain]


def test_redrive_count_moves_the_oldest(api: httpx.Client) -> None:
    dead_letter(api)
    first, second = [i for i, _ in pairs(api, DEAD)]
    r = api.post(url(DEAD) + "/redrive", json={"count": 1})
    assert [m["id"] for m in r.json()["moved"]] == [first]
    assert [i for i, _ in pairs(api, DEAD)] == [second]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"ids": ["1-0"], "count": 1}, 400),
        ({"ids": ["x"]}, 400),
        ({"count": 0}, 400),
        ({"count": 1_000_000}, 400),
        ({"ids": []}, 422),
        ({"to": ""}, 422),
        ({"ids": "1-0"}, 422),
    ],
)
def test_a_bad_redrive_is_refused(api: httpx.Client, body: dict[str, Any], status: int) -> None:
    add(api, DEAD, ("x", "1"), id="1-0")
    problem(api.post(url(DEAD) + "/redrive", json=body), status)
    assert len(pairs(api, DEAD)) == 1


def test_redrive_of_a_missing_stream_is_a_404(api: httpx.Client) -> None:
    problem(api.post(url(DEAD) + "/redrive", json={}), 404)


# --- dead-letter chains (issue 37) -------------------------------------------------------

A, B, C = "{o}a", "{o}b", "{o}c"


def groups_on(api: httpx.Client, *streams: str) -> None:
    for name in streams:
        r = api.post(url(name) + "/groups", json={"name": "g", "id": "$", "mkstream": True})
        assert r.status_code == 201, r.text


def dead_to(api: httpx.Client, stream: str, dead: str) -> httpx.Response:
    return api.put(url(stream) + "/groups/g/policy", json={"dead_letter_stream": dead})


def cycle(dead: str, key: str) -> str:
    return (
        f"ERR dead_letter_stream '{dead}' leads back to '{key}' through the policies of its "
        "groups: dead letters would go round for ever"
    )


def test_groups_cannot_dead_letter_into_each_other(api: httpx.Client) -> None:
    """The probe of issue 37: two groups naming each other's stream grew without bound.
    The second policy, which would close the cycle, is a 409; so is the third of three."""
    groups_on(api, A, B, C)
    assert dead_to(api, A, B).status_code == 200
    assert problem(dead_to(api, B, A), 409, "ERR")["error"] == cycle(A, B)
    problem(api.get(url(B) + "/groups/g/policy"), 404)  # nothing was set
    assert dead_to(api, B, C).status_code == 200
    assert problem(dead_to(api, C, A), 409)["error"] == cycle(A, C)
    assert dead_to(api, C, C + ":dead").status_code == 200  # a chain that ends is fine


def test_a_chain_of_dead_letters_keeps_the_first_origin_and_counts_hops(
    api: httpx.Client,
) -> None:
    groups_on(api, A, B, C)
    assert dead_to(api, A, B).status_code == 200
    assert dead_to(api, B, C).status_code == 200
    add(api, A, ("n", "1"), id="1-0")
    for name in (A, B):
        g = url(name) + "/groups/g"
        r = api.post(f"{g}/consumers/c/reads", json={})
        entry_ids = [e["id"] for e in r.json()["entries"]]
        assert api.post(f"{g}/nacks", json={"ids": entry_ids, "mode": "FATAL"}).is_success
        r = api.post(f"{g}/consumers/d/reads", json={})
        assert r.json()["entries"] == []  # dead-lettered, not delivered
    [(_, first)] = pairs(api, B)
    [(_, second)] = pairs(api, C)
    assert [f for f, _ in first] == ["n", *DEAD_LETTER_FIELDS]
    assert second == [*first, ["xs-dl-hops", "2"]]  # not wrapped again: one field more
    assert dict(map(tuple, second))["xs-dl-stream"] == A
    r = api.post(url(C) + "/redrive", json={})
    assert [m["stream"] for m in r.json()["moved"]] == [A]  # back to the first origin
    assert [f for _, f in pairs(api, A)][-1] == [["n", "1"]]


# --- retention -------------------------------------------------------------------------


def test_a_retention_is_set_read_and_removed_by_name(api: httpx.Client) -> None:
    R = url(S) + "/retention"
    problem(api.get(R), 404)
    problem(api.delete(R), 404)
    body = {"max_age_ms": 86_400_000, "max_len": 1000, "max_bytes": 1 << 20}
    r = api.put(R, json=body)  # the stream need not exist: it waits for it, and says so
    waiting = {"state": "waiting",
               "reason": f"stream '{S}' does not exist: trimmed once it is created"}  # fmt: skip
    shown = {**body, "policy": "KEEPREF", **waiting}  # the reference policy is always named
    assert r.status_code == 200 and r.json() == shown, r.text
    assert api.get(R).json() == shown
    add(api, S, ("n", "1"))
    assert api.put(R, json={"max_len": 5}).json() == {
        "max_age_ms": None, "max_len": 5, "max_bytes": None, "policy": "KEEPREF",
        "state": "active", "reason": None,
    }  # fmt: skip
    assert api.delete(url(S)).status_code == 204
    shown = api.get(R).json()
    assert shown["max_len"] == 5 and shown["state"] == "waiting"  # kept by name: outlives it
    assert api.delete(R).status_code == 204
    problem(api.get(R), 404)
    problem(api.delete(R), 404)


def test_a_retention_with_a_reference_policy(api: httpx.Client, target: Target) -> None:
    """ACKED / DELREF trims (Redis 8.2): the engine has them; a Redis older than 8.2 (the
    7.0 targets here) refuses them when the retention is set, naming the version."""
    R = url(S) + "/retention"
    r = api.put(R, json={"max_len": 5, "policy": "ACKED"})
    if not target.redis:
        assert r.status_code == 200 and r.json()["policy"] == "ACKED", r.text
    else:
        assert "retention with ACKED needs Redis 8.2" in problem(r, 400)["error"]
        problem(api.get(R), 404)


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({}, 400, "ERR a retention needs max_age_ms, max_len or max_bytes"),
        ({"max_len": -1}, 400, f"ERR max_len must be an integer from 0 to {MAX_POLICY_MS}"),
        ({"max_age_ms": 0}, 400, f"ERR max_age_ms must be an integer from 1 to {MAX_POLICY_MS}"),
        ({"max_len": "5"}, 422, None),
        ({"max_entries": 5}, 422, None),
        ({"max_len": 5, "policy": "DROP"}, 422, None),
    ],
)
def test_a_bad_retention_is_refused(
    api: httpx.Client, body: dict[str, Any], status: int, text: str | None
) -> None:
    R = url(S) + "/retention"
    p = problem(api.put(R, json=body), status)
    if text is not None:
        assert p["error"] == text
    problem(api.get(R), 404)


def metric(api: httpx.Client, name: str) -> float:
    for line in api.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_the_service_trims_a_stream_to_its_retention_in_the_background(
    api: httpx.Client,
) -> None:
    entries = [{"fields": {"n": str(i)}} for i in range(250)]  # nodes of 100, 100, 50
    assert api.post(url(S) + "/entries", json={"entries": entries}).status_code == 201
    before = metric(api, "xstreams_retention_trimmed_total")
    assert api.put(url(S) + "/retention", json={"max_len": 100}).status_code == 200
    # MAXLEN ~ 100: whole nodes only, so the first node goes and 150 entries stay.
    until(lambda: api.get(url(S)).json()["length"] == 150, 30, "the background trim")
    assert metric(api, "xstreams_retention_trimmed_total") - before >= 100


def test_old_entries_of_a_quiet_stream_go_at_the_next_sweep(api: httpx.Client) -> None:
    """Retention by age trims the node holding the boundary exactly: a stream of three
    entries, two of them far older than ``max_age_ms``, keeps only the new one, though no
    node of it ever fills (MINID ``~`` alone would keep all three)."""
    add(api, S, ("n", "old"), id="1-0")
    add(api, S, ("n", "old"), id="2-0")
    add(api, S, ("n", "new"))
    assert api.put(url(S) + "/retention", json={"max_age_ms": 3_600_000}).status_code == 200
    until(lambda: api.get(url(S)).json()["length"] == 1, 10, "the old entries trimmed")
    assert [n for _, n in pairs(api, S)] == [[["n", "new"]]]


def test_metrics_count_dead_letters(api: httpx.Client) -> None:
    dead_letter(api)
    assert metric(api, "xstreams_dead_lettered_total") == 2
    assert metric(api, "xstreams_redelivered_total") == 0
    assert metric(api, "xstreams_dead_letter_entries") == 2


def test_info_stats_count_dead_letters(api: httpx.Client, xs: Commands, target: Target) -> None:
    if target.redis:
        pytest.skip("INFO is the Redis server's own in front of Redis")
    dead_letter(api)
    text = xs("INFO", "stats")
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    assert fields["xstreams_policy_groups"] == "1"
    assert fields["xstreams_dead_lettered"] == "2"
    assert fields["xstreams_redelivered"] == "0"
    assert fields["xstreams_dead_letter_entries"] == "2"
    assert fields["xstreams_policy_group0"] == (
        f"stream={S},group=g,redelivered=0,dead_lettered=2,dead_letter_stream={DEAD},"
        "dead_letter_length=2"
    )
