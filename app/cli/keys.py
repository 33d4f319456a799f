"""``xstreams keys create | list | revoke``: API keys scoped to verbs on stream globs.

They write the service's database directly, so they work whether the service runs or not; a
running service picks the change up within about a second (it re-reads the keys), and ends
the event streams of a revoked key. That database is the one ``serve`` uses, with either
backend: give both the same ``--data-dir`` / ``--database-url`` (or XSTREAMS_* variables); in
front of Redis it holds the keys only, and front-ends on several hosts share one URL.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

import typer

from app.cli.storage import DatabaseUrl, DataDir, _settings

keys = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)

Globs = Annotated[list[str] | None, typer.Option(help="A stream glob (repeatable).")]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@keys.command()
def create(
    name: Annotated[str, typer.Option(help="A unique name for the key (shown in logs).")],
    read: Globs = None,
    consume: Globs = None,
    write: Globs = None,
    admin: Annotated[bool, typer.Option(help="Everything, the whole keyspace included.")] = False,
    metrics: Annotated[
        bool, typer.Option(help="Scrape /metrics (no stream content); for a monitoring system.")
    ] = False,
    expires: Annotated[
        str | None, typer.Option(help="Lifetime: 45s, 30m, 12h, 30d, 2w (default: none).")
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            help="Requests this key may make: 100/s, 6000/min, 100/s:300 (300 at once);"
            " default: the service's --rate-requests."
        ),
    ] = None,
    rate_bytes: Annotated[
        str | None,
        typer.Option(
            help="Bytes this key may append (field names and values): 1M/s, 100M/min:10M;"
            " default: the service's --rate-bytes."
        ),
    ] = None,
    rate_entries: Annotated[
        str | None,
        typer.Option(
            help="Entries this key may read: 1000/s, 100k/min; default: the service's"
            " --rate-entries."
        ),
    ] = None,
    storage: Annotated[
        str | None,
        typer.Option(
            help="What the streams under this key's prefix may hold: entries=1000000,"
            "bytes=1GB (either part); default: the service's --storage-quota."
        ),
    ] = None,
    prefix: Annotated[
        str | None,
        typer.Option(
            help="Bind the key to a tenant prefix (tenant-a:): added to every stream name it"
            " sends, removed from every name it sees; its globs are relative to it."
        ),
    ] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create a key and print its secret, once: only a hash of it is stored."""
    from app.access import Grant, KeyRecord, hash_secret, new_key
    from app.access.quotas import QuotaError, StorageQuota
    from app.access.rates import CredentialLimits, Rate, RateError
    from app.durations import parse_duration_ms
    from app.storage.keys import DuplicateKeyName, insert_key
    from app.storage.offline import open_database

    grant = Grant.of(
        read=read or (), consume=consume or (), write=write or (), admin=admin, metrics=metrics
    )
    if not (grant.admin or grant.metrics or grant.read or grant.consume or grant.write):
        typer.echo(
            "error: grant at least one of --read, --consume, --write, --metrics or --admin",
            err=True,
        )
        raise typer.Exit(2)
    if prefix is not None:
        from app.access.prefix import PrefixError, check_prefix

        try:
            check_prefix(prefix)
        except PrefixError as e:
            typer.echo(f"error: --prefix: {e}", err=True)
            raise typer.Exit(2) from None
        if admin:
            typer.echo("error: a key with --prefix cannot be --admin", err=True)
            raise typer.Exit(2)
    now = _now_ms()
    expires_at: int | None = None
    if expires is not None:
        lifetime = parse_duration_ms(expires)
        if not lifetime:
            typer.echo(f"error: --expires takes 45s, 30m, 12h, 30d, 2w; got {expires!r}", err=True)
            raise typer.Exit(2)
        expires_at = now + lifetime
    rates: dict[str, Rate | None] = {}
    for option, policy, text in (
        ("--rate", "requests", rate),
        ("--rate-bytes", "bytes", rate_bytes),
        ("--rate-entries", "entries", rate_entries),
    ):
        try:
            rates[policy] = None if text is None else Rate.parse(text)
        except RateError as e:
            typer.echo(f"error: {option}: {e}", err=True)
            raise typer.Exit(2) from None
    if storage is not None and not prefix:
        typer.echo("error: --storage counts what the key's --prefix holds: give one", err=True)
        raise typer.Exit(2)
    try:
        quota = None if storage is None else StorageQuota.parse(storage)
    except QuotaError as e:
        typer.echo(f"error: --storage: {e}", err=True)
        raise typer.Exit(2) from None
    limits = CredentialLimits(**rates, storage=quota)
    key_id, secret, text = new_key()
    record = KeyRecord(
        key_id=key_id,
        name=name,
        secret_hash=hash_secret(secret),
        grant=grant,
        created_at_ms=now,
        expires_at_ms=expires_at,
        limits=limits,
        prefix=prefix or "",
    )
    db = open_database(_settings(data_dir, database_url))
    try:
        from app.storage import migrate

        migrate.upgrade(db.engine)
        insert_key(db.engine, record)
    except DuplicateKeyName:
        typer.echo(f"error: a key named {name!r} exists already", err=True)
        raise typer.Exit(1) from None
    finally:
        db.close()
    typer.echo(text)
    typer.echo(
        f"key {name!r} created{'' if expires_at is None else ', expires ' + _when(expires_at)};"
        " the secret above is shown only now",
        err=True,
    )


@keys.command(name="list")
def list_keys(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List keys: name, state, grant, dates (never secrets)."""
    from app.storage import migrate
    from app.storage.keys import load_keys
    from app.storage.offline import open_database

    db = open_database(_settings(data_dir, database_url))
    try:
        migrate.upgrade(db.engine)
        records = load_keys(db.engine)
    finally:
        db.close()
    now = _now_ms()
    for r in records:
        state = (
            "revoked"
            if r.revoked_at_ms is not None
            else ("expired" if not r.live(now) else "active")
        )
        g = r.grant
        scope = (
            "admin"
            if g.admin
            else " ".join(
                [
                    f"{verb}={','.join(globs)}"
                    for verb, globs in (
                        ("read", g.read),
                        ("consume", g.consume),
                        ("write", g.write),
                    )
                    if globs
                ]
                + (["metrics"] if g.metrics else [])
            )
        )
        for policy, rate in r.limits.as_json().items():
            if policy == "storage":
                scope += f" storage={r.limits.storage}"
            else:
                scope += f" rate={rate}" if policy == "requests" else f" rate_{policy}={rate}"
        if r.prefix:
            scope += f" prefix={r.prefix}"
        typer.echo(
            f"{r.name}\t{state}\t{scope}\tcreated {_when(r.created_at_ms)}"
            f"\texpires {_when(r.expires_at_ms)}"
        )


@keys.command()
def revoke(
    name: Annotated[str, typer.Argument(help="The key's name.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a key: refused from now on, its open event streams end within seconds."""
    from app.storage import migrate
    from app.storage.keys import revoke_key
    from app.storage.offline import open_database

    db = open_database(_settings(data_dir, database_url))
    try:
        migrate.upgrade(db.engine)
        done = revoke_key(db.engine, name, _now_ms())
    finally:
        db.close()
    if not done:
        typer.echo(f"error: no active key named {name!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"key {name!r} revoked")
