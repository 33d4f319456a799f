"""``xstreams serve``'s flags, built from the settings model (app/cli/serve_options.py): every
setting is a flag, the old flag names still parse, a flag given overrides the environment and
one not given leaves it (and the default) in force, also for the workers that read the
settings back from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from app.cli import cli
from app.cli.serve_options import OPTIONS, PANELS, FlagError, overrides
from app.server.workers import settings_env
from app.settings import FsyncMode, Settings


def _serve() -> Any:
    """``xstreams serve`` as click sees it."""
    group: Any = typer.main.get_command(cli)
    return group.get_command(group.make_context("xstreams", ["serve"]), "serve")


def _parsed(*args: str) -> dict[str, Any]:
    """What ``xstreams serve ARGS`` hands ``Settings``, parsed as the command line does."""
    return overrides(_serve().make_context("serve", list(args)).params)


def _serve_flags() -> set[str]:
    return {opt for p in _serve().params for opt in (*p.opts, *p.secondary_opts)}


def test_every_setting_is_a_flag_under_a_heading() -> None:
    """Fails when a field is added to Settings without a heading in PANELS (its flag is
    generated, but --help and the reference would file it under "Other")."""
    placed = [field for fields in PANELS.values() for field in fields]
    assert sorted(placed) == sorted(Settings.model_fields), "each field in exactly one panel"
    flags = _serve_flags()
    for option in OPTIONS:
        assert option.flag in flags, option.field
        if option.kind == "flag":
            assert f"--no-{option.flag[2:]}" in flags
    assert {o.field for o in OPTIONS} == set(Settings.model_fields)
    assert {"--fd", "--supervisor"} <= flags  # the workers' hidden flags stay


def test_every_setting_has_a_meaning() -> None:
    missing = [name for name, f in Settings.model_fields.items() if not f.description]
    assert missing == []


def test_the_flags_named_before_generation_still_parse(tmp_path: Path) -> None:
    got = _parsed(
        "--cors-origin", "https://a.example", "--cors-origin", "https://b.example",
        "--webhook-allow-host", "hooks.example.com", "--webhook-allow-host", "*.example.net",
        "--jwt-public-key", str(tmp_path / "k.pem"), "--wait-timeout", "250",
        "--insecure-no-auth", "--webhook-allow-http", "--webhook-allow-private",
        "--host", "0.0.0.0", "--port", "9001", "--data-dir", str(tmp_path),
        "--token", "t", "--fsync", "everysec", "--workers", "2", "--wait-replicas", "1",
        "--jwt-max-lifetime-ms", "60000", "--max-connections", "10",
        "--header-timeout-ms", "5", "--body-timeout-ms", "6", "--log-format", "json",
    )  # fmt: skip
    s = Settings(**got)
    assert s.cors_origins == ["https://a.example", "https://b.example"]
    assert s.webhook_allow_hosts == ["hooks.example.com", "*.example.net"]
    assert s.jwt_public_key_file == tmp_path / "k.pem"
    assert s.wait_timeout_ms == 250
    assert s.insecure_no_auth and s.webhook_allow_http and s.webhook_allow_private
    assert (s.host, s.port, s.data_dir, s.token) == ("0.0.0.0", 9001, tmp_path, "t")
    assert s.fsync is FsyncMode.EVERYSEC and s.workers == 2 and s.wait_replicas == 1
    assert (s.header_timeout_ms, s.body_timeout_ms, s.max_connections) == (5, 6, 10)


def test_a_flag_overrides_the_environment_and_a_missing_one_leaves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XSTREAMS_PORT", "7000")
    monkeypatch.setenv("XSTREAMS_SSE_RETRY_MS", "1234")
    monkeypatch.setenv("XSTREAMS_SNAPSHOT_ON_SHUTDOWN", "false")
    monkeypatch.setenv("XSTREAMS_METRICS_GROUP_STREAMS", "orders-*,billing")
    monkeypatch.setenv("XSTREAMS_RETENTION", '{"logs-*": {"max_len": 10}}')
    assert _parsed() == {}  # nothing given: nothing overridden
    s = Settings(**_parsed("--port", "7001", "--snapshot-on-shutdown"))
    assert s.port == 7001 and s.snapshot_on_shutdown is True  # the flags win
    assert s.sse_retry_ms == 1234  # the variable stays in force
    assert s.metrics_group_streams == ["orders-*", "billing"]  # and is parsed as before
    assert s.retention == {"logs-*": {"max_len": 10}}
    monkeypatch.delenv("XSTREAMS_SSE_RETRY_MS")
    assert Settings(**_parsed()).sse_retry_ms == 2_000  # then the default


def test_switches_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XSTREAMS_INSECURE_NO_AUTH", "true")
    assert Settings(**_parsed("--no-insecure-no-auth")).insecure_no_auth is False
    assert Settings(**_parsed()).insecure_no_auth is True


def test_lists_repeat_and_retention_takes_json() -> None:
    got = _parsed(
        "--metrics-group-stream", "orders-*", "--metrics-group-stream", "billing",
        "--retention", '{"logs-*": {"max_age_ms": 86400000}}',
    )  # fmt: skip
    s = Settings(**got)
    assert s.metrics_group_streams == ["orders-*", "billing"]
    assert s.retention == {"logs-*": {"max_age_ms": 86400000}}
    with pytest.raises(FlagError, match="--retention: not JSON"):
        _parsed("--retention", "{logs")


def test_every_kind_of_flag_reaches_the_workers_through_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The supervisor of --workers hands its flags down as XSTREAMS_* variables
    (app/server/workers.py); each worker's Settings() must read back what the flags said."""
    got = _parsed(
        "--backend", "redis://h:1/0", "--workers", "3", "--data-dir", str(tmp_path),
        "--no-snapshot-on-shutdown", "--cors-origin", "https://a.example",
        "--webhook-allow-host", "*.example.net", "--metrics-group-stream", "orders-*",
        "--retention", '{"logs-*": {"max_len": 5}}', "--retention-interval-s", "0.5",
        "--fsync", "off", "--jwt-public-key", str(tmp_path / "k.pem"),
    )  # fmt: skip
    for name, value in settings_env(got).items():
        monkeypatch.setenv(name, value)
    assert Settings() == Settings(**got)
