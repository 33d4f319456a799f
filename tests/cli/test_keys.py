"""``xstreams keys``: a key is printed once, stored as a hash, listed, and revoked by name."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from app.access import Grant, KeyRecord, KeyRing, Verb, split_key
from app.cli import cli
from app.storage.keys import load_keys
from app.storage.tables import api_keys


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["keys", *args])
    return result.exit_code, result.stdout, result.stderr


def test_create_prints_the_secret_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    code, out, err = run(
        "create", "--name", "dashboard", "--read", "orders-*", "--read", "audit", "--consume",
        "orders-*", *db,
    )  # fmt: skip
    assert code == 0, err
    text = out.strip()
    key_id, secret = split_key(text)  # type: ignore[misc]
    assert "shown only now" in err
    engine = create_engine(f"sqlite:///{tmp_path / 'xstreams.db'}")
    with engine.connect() as conn:
        stored = conn.execute(select(api_keys)).one()
    assert stored.key_id == key_id and secret not in repr(tuple(stored))
    records = load_keys(engine)
    ring = KeyRing(records)
    found = ring.find(text, time.time_ns() // 1_000_000)
    assert found is not None and found.name == "dashboard"
    assert found.grant == Grant.of(read=["orders-*", "audit"], consume=["orders-*"])
    assert found.grant.allows(Verb.CONSUME, "orders-eu") and not found.grant.has(Verb.WRITE)
    engine.dispose()


def test_list_and_revoke(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    assert run("create", "--name", "a", "--write", "x", *db)[0] == 0
    assert run("create", "--name", "b", "--admin", "--expires", "30d", *db)[0] == 0
    assert run("create", "--name", "c", "--metrics", "--read", "r*", *db)[0] == 0
    code, out, _ = run("list", *db)
    lines = out.strip().splitlines()
    assert code == 0 and [line.split("\t")[:3] for line in lines] == [
        ["a", "active", "write=x"],
        ["b", "active", "admin"],
        ["c", "active", "read=r* metrics"],
    ]
    assert "expires 20" in lines[1] and "expires -" in lines[0]
    assert run("revoke", "a", *db)[:2] == (0, "key 'a' revoked\n")
    assert run("list", *db)[1].splitlines()[0].split("\t")[1] == "revoked"
    code, _, err = run("revoke", "a", *db)  # already revoked
    assert code == 1 and "no active key named 'a'" in err


def test_refusals(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    code, _, err = run("create", "--name", "nothing", *db)
    assert code == 2 and "grant at least one" in err
    code, _, err = run("create", "--name", "n", "--read", "*", "--expires", "soon", *db)
    assert code == 2 and "--expires" in err
    assert run("create", "--name", "n", "--read", "*", *db)[0] == 0
    code, _, err = run("create", "--name", "n", "--read", "*", *db)
    assert code == 1 and "exists already" in err


def test_a_key_created_with_a_rate_keeps_it(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    code, _, err = run("create", "--name", "app", "--write", "x", "--rate", "100/s:300", *db)
    assert code == 0, err
    (record,) = _records(tmp_path)
    assert str(record.limits.requests) == "100/s:300"
    listed = run("list", *db)[1].strip().split("\t")
    assert listed[:3] == ["app", "active", "write=x rate=100/s:300"]
    code, _, err = run("create", "--name", "other", "--write", "x", "--rate", "fast", *db)
    assert code == 2 and "--rate: not a rate: 'fast'" in err
    assert [r.name for r in _records(tmp_path)] == ["app"]  # nothing half-written


def _records(tmp_path: Path) -> list[KeyRecord]:
    engine = create_engine(f"sqlite:///{tmp_path / 'xstreams.db'}")
    try:
        return list(load_keys(engine))
    finally:
        engine.dispose()


def test_a_key_may_limit_bytes_appended_and_entries_read(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    args = ["--rate-bytes", "1M/s:5M", "--rate-entries", "100k/min"]
    code, _, err = run("create", "--name", "app", "--write", "x", *args, *db)
    assert code == 0, err
    (record,) = _records(tmp_path)
    assert record.limits.requests is None
    assert (str(record.limits.bytes), str(record.limits.entries)) == (
        "1000000/s:5000000",
        "100000/min",
    )
    listed = run("list", *db)[1].strip().split("\t")
    assert listed[2] == "write=x rate_bytes=1000000/s:5000000 rate_entries=100000/min"
    code, _, err = run("create", "--name", "b", "--read", "x", "--rate-entries", "0/s", *db)
    assert code == 2 and "--rate-entries: a rate's count" in err


def test_a_key_with_a_prefix_may_carry_a_storage_quota(tmp_path: Path) -> None:
    db = ["--data-dir", str(tmp_path)]
    quota = ["--storage", "entries=1000,bytes=1MiB"]
    code, _, err = run("create", "--name", "t", "--write", "*", "--prefix", "t:", *quota, *db)
    assert code == 0, err
    (record,) = _records(tmp_path)
    assert (record.limits.storage.entries, record.limits.storage.bytes) == (1000, 2**20)  # type: ignore[union-attr]
    listed = run("list", *db)[1].strip().split("\t")
    assert listed[2] == "write=* storage=entries=1000,bytes=1048576 prefix=t:"
    code, _, err = run("create", "--name", "u", "--write", "*", *quota, *db)
    assert code == 2 and "--storage counts what the key's --prefix holds" in err
    code, _, err = run(
        "create", "--name", "v", "--write", "*", "--prefix", "v:", "--storage", "rows=3", *db
    )
    assert code == 2 and "--storage: unknown storage quota parts: rows" in err
    assert len(_records(tmp_path)) == 1
