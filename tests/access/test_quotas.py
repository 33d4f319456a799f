"""Storage quotas as written on a key, in a claim and in settings (app/access/quotas.py)."""

from __future__ import annotations

import pytest

from app.access.quotas import QuotaError, StorageQuota, parse_size
from app.access.rates import CredentialLimits, RateError


def test_sizes_take_decimal_and_binary_units() -> None:
    assert parse_size("500") == 500
    assert parse_size("2KB") == 2000 and parse_size("2kib") == 2048
    assert parse_size("1GB") == 10**9 and parse_size("1 GiB") == 2**30
    assert parse_size(7) == 7
    for bad in ("-1", "1.5GB", "GB", "1PB", "", True, -3):
        with pytest.raises(QuotaError):
            parse_size(bad)  # type: ignore[arg-type]


def test_a_quota_is_written_as_parts_or_an_object() -> None:
    q = StorageQuota.parse("entries=1000, bytes=1MB")
    assert q == StorageQuota(entries=1000, bytes=10**6)
    assert StorageQuota.parse(str(q)) == q
    assert StorageQuota.parse("bytes=1KiB") == StorageQuota(bytes=1024)
    assert StorageQuota.from_json({"entries": "5"}) == StorageQuota(entries=5)
    for bad in ("entries", "entries=x", "rows=3", "", "entries=-1"):
        with pytest.raises(QuotaError):
            StorageQuota.parse(bad)


def test_limits_carry_a_storage_quota_and_give_it_back() -> None:
    doc = {"requests": "10/s", "storage": {"entries": 100, "bytes": "1KB"}}
    limits = CredentialLimits.from_json(doc)
    assert limits.storage == StorageQuota(entries=100, bytes=1000)
    assert limits.limited
    assert CredentialLimits.from_json(limits.as_json()) == limits
    with pytest.raises(RateError, match="storage"):
        CredentialLimits.from_json({"storage": {"entries": 1, "files": 2}})
    with pytest.raises(RateError, match="storage"):
        CredentialLimits.from_json({"storage": "lots"})
