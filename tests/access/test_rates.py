"""A credential's rate: how it is written, and GCRA's arithmetic (app/access/rates.py)."""

from __future__ import annotations

import pytest

from app.access import Authenticator, Grant, KeyRing
from app.access.rates import UNLIMITED, CredentialLimits, Mode, Policy, Rate, RateError, spend
from tests.access.test_credentials import NOW_MS, bearer, key_record

S = 1_000_000  # microseconds


@pytest.mark.parametrize(
    ("text", "count", "window_s", "burst"),
    [
        ("100/s", 100, 1, 100),
        ("100/s:300", 100, 1, 300),
        ("6000/min", 6000, 60, 6000),
        (" 5 / h : 2 ", 5, 3600, 2),
        ("1/second", 1, 1, 1),
    ],
)
def test_a_rate_is_written_count_window_and_burst(
    text: str, count: int, window_s: int, burst: int
) -> None:
    rate = Rate.parse(text)
    assert (rate.count, rate.window_s, rate.burst) == (count, window_s, burst)
    assert Rate.parse(str(rate)) == rate


@pytest.mark.parametrize("text", ["", "100", "100/d", "0/s", "-1/s", "1/s:0", "1.5/s", "x/s"])
def test_a_rate_written_wrong_says_how_to_write_it(text: str) -> None:
    with pytest.raises(RateError):
        Rate.parse(text)


def test_a_burst_passes_then_the_next_request_is_told_when() -> None:
    rate = Rate.parse("10/s:3")  # one request every 100 ms, three at once
    tat, now = None, 5 * S
    for left in (2, 1, 0):
        decision, tat = spend(tat, now, rate)
        assert decision.allowed and decision.remaining == left
    refused, kept = spend(tat, now, rate)
    assert not refused.allowed and kept == tat  # a refusal spends nothing
    assert refused.retry_after_ms == 100 and refused.reset_ms == 300
    passed, _ = spend(tat, now + 100_000, rate)  # exactly when it was told
    assert passed.allowed
    early, _ = spend(tat, now + 99_999, rate)
    assert not early.allowed and early.retry_after_ms == 1


def test_a_quiet_credential_gets_its_whole_burst_back_not_more() -> None:
    rate = Rate.parse("10/s:3")
    tat = None
    for _ in range(3):
        _, tat = spend(tat, 0, rate)
    whole, _ = spend(tat, 60 * S, rate)
    assert whole.allowed and whole.remaining == 2


def test_a_cost_spends_several_at_once() -> None:
    rate = Rate.parse("10/s:5")
    decision, tat = spend(None, 0, rate, cost=5)
    assert decision.allowed and decision.remaining == 0
    refused, _ = spend(tat, 0, rate, cost=1)
    assert not refused.allowed


def test_limits_from_json() -> None:
    assert CredentialLimits.from_json({"requests": "5/s"}).requests == Rate(5, 1, 5)
    assert CredentialLimits.from_json({}) == UNLIMITED
    bad_docs: list[object] = [[], {"requests": 5}, {"requests": "fast"}, {"storage": "1/s"}]
    for bad in bad_docs:
        with pytest.raises(RateError):
            CredentialLimits.from_json(bad)


def test_an_api_keys_limits_reach_its_principal() -> None:
    limits = CredentialLimits(requests=Rate.parse("7/min"))
    record, text = key_record(grant=Grant.of(read=["*"]), limits=limits)
    auth = Authenticator(keys=KeyRing([record]))
    principal = auth.authenticate(bearer(text), b"", NOW_MS)
    assert principal is not None and principal.limits == limits


def test_a_read_owes_what_the_burst_cannot_pay_and_peeks_before_the_next() -> None:
    """Entries are spent after the read (Mode.OWE): a page bigger than the burst is served,
    and the next read's PEEK is refused until the rate has repaid the debt."""
    rate = Rate.parse("100/s:10")  # 10 ms an entry
    first, _ = spend(None, 0, rate, mode=Mode.PEEK)
    assert first.allowed and first.remaining == 10
    owed, tat = spend(None, 0, rate, cost=50, mode=Mode.OWE)
    assert owed.allowed and owed.remaining == 0 and tat == 500_000
    peek, kept = spend(tat, 0, rate, mode=Mode.PEEK)
    assert not peek.allowed and kept == tat  # a peek spends nothing
    assert peek.retry_after_ms == 410  # the 40 owed past the burst, and one more
    assert spend(tat, 410_000, rate, mode=Mode.PEEK)[0].allowed


@pytest.mark.parametrize(
    ("text", "count", "burst"),
    [
        ("10M/s", 10_000_000, 10_000_000),
        ("1G/s:5M", 10**9, 5_000_000),
        ("100k/min", 100_000, 100_000),
    ],
)
def test_a_count_may_be_written_in_thousands_millions_billions(
    text: str, count: int, burst: int
) -> None:
    rate = Rate.parse(text)
    assert (rate.count, rate.burst) == (count, burst)
    assert Rate.parse(str(rate)) == rate


def test_bytes_at_a_rate_past_a_million_a_second_stay_exact() -> None:
    rate = Rate.parse("1G/s:1M")  # a byte is a nanosecond: a spend is rounded once
    decision, tat = spend(None, 0, rate, cost=1_000_000)
    assert decision.allowed and tat == 1000
    refused, _ = spend(tat, 0, rate, cost=1)
    assert not refused.allowed


def test_every_policy_from_json() -> None:
    doc = {"requests": "5/s", "bytes": "1M/s", "entries": "100/s:1000"}
    limits = CredentialLimits.from_json(doc)
    assert limits.bytes == Rate(1_000_000, 1, 1_000_000)
    assert limits.of(Policy.ENTRIES) == Rate(100, 1, 1000)
    assert limits.as_json() == {"requests": "5/s", "bytes": "1000000/s", "entries": "100/s:1000"}
