"""``xstreams serve``'s flags, one per setting, built from ``Settings.model_fields``.

The model is the one source of truth: a field's name gives its flag (``max_body_bytes`` is
``--max-body-bytes``) and its variable (``XSTREAMS_MAX_BODY_BYTES``), its default and its
``description`` what the help and docs/operations/settings.md say. A field added to the model
is a flag at once; only the few whose flag is older than this rule are named here
(``FLAG_NAMES``), and every field must sit under one heading (``PANELS``: a test holds it).

A flag not given is not passed on: the environment, then the default, stay in force, since
pydantic-settings is the one reader of the environment (no flag reads a variable itself).
Values are validated by the model, not by the flags, so a bound lives in one place.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import typer
from pydantic.fields import FieldInfo

from app.settings import Settings

__all__ = ["FLAG_NAMES", "OPTIONS", "PANELS", "Option", "overrides", "with_settings_flags"]

# Flags whose name is not their field's, kept as they were before flags were generated.
FLAG_NAMES = {
    "cors_origins": "--cors-origin",
    "webhook_allow_hosts": "--webhook-allow-host",
    "metrics_group_streams": "--metrics-group-stream",
    "jwt_public_key_file": "--jwt-public-key",
    "wait_timeout_ms": "--wait-timeout",
}

# The headings of ``serve --help`` and of the settings reference, in order, and their fields.
PANELS: dict[str, tuple[str, ...]] = {
    "Network": ("host", "port", "workers", "ssl_certfile", "ssl_keyfile"),
    "Logging": ("log_level", "log_format"),
    "Storage & durability": (
        "data_dir",
        "database_url",
        "fsync",
        "snapshot_after_bytes",
        "snapshot_after_records",
        "snapshot_on_shutdown",
    ),
    "Access": (
        "token",
        "jwt_secret",
        "jwt_public_key_file",
        "jwt_audience",
        "jwt_max_lifetime_ms",
        "auth_cookie",
        "keys_refresh_ms",
        "cors_origins",
        "insecure_no_auth",
        "rate_requests",
        "rate_requests_admin",
        "rate_bytes",
        "rate_bytes_admin",
        "rate_entries",
        "rate_entries_admin",
        "storage_quota",
        "storage_refresh_s",
        "fair_slots",
        "fair_queue_per_key",
    ),
    "Connections": (
        "max_connections",
        "header_timeout_ms",
        "body_timeout_ms",
        "keepalive_timeout_ms",
        "max_body_bytes",
    ),
    "Limits": (
        "max_pipeline_commands",
        "max_command_args",
        "max_read_keys",
        "max_reply_entries",
        "max_restore_bytes",
        "max_restore_node_entries",
        "max_stream_groups",
        "max_group_consumers",
        "rest_default_count",
        "rest_max_count",
        "pipeline_slice_ms",
    ),
    "Idempotency": (
        "idempotency_window_s",
        "idempotency_max_keys",
        "idempotency_max_bytes",
        "idmp_max_producers",
        "ds_max_producers",
    ),
    "SSE": (
        "sse_heartbeat_ms",
        "sse_retry_ms",
        "sse_max_connections",
        "sse_max_connections_per_key",
        "sse_max_lifetime_ms",
        "sse_send_buffer_bytes",
        "sse_send_timeout_ms",
    ),
    "Webhooks": (
        "webhook_allow_hosts",
        "webhook_allow_http",
        "webhook_allow_private",
        "webhook_refresh_s",
        "webhook_block_ms",
        "webhook_retry_after_max_ms",
    ),
    "Retention": ("retention", "retention_interval_s", "retention_step"),
    "Metrics": ("metrics_group_streams", "metrics_max_groups"),
    "Redis semantics": ("stream_node_max_entries", "stream_node_max_bytes", "xread_last_entry"),
    "Redis backend": ("backend", "wait_replicas", "wait_timeout_ms", "redis_block_connections"),
}

# What a secret's value is shown as, by ``xstreams settings``.
SECRETS = frozenset({"token", "jwt_secret"})


@dataclass(frozen=True)
class Option:
    """One setting as a flag: its names, its value's form, and what the help says of it."""

    field: str
    panel: str
    kind: str  # "flag" (bool: --x/--no-x), "list" (repeatable), "json" (a dict), "value"
    value_type: type
    info: FieldInfo

    @property
    def flag(self) -> str:
        return FLAG_NAMES.get(self.field, "--" + self.field.replace("_", "-"))

    @property
    def names(self) -> str:
        """The flag as the help shows it: ``--x/--no-x`` for a switch, else ``--x METAVAR``."""
        if self.kind == "flag":
            return f"{self.flag} / --no-{self.flag[2:]}"
        return f"{self.flag} {self.metavar}"

    @property
    def envvar(self) -> str:
        return "XSTREAMS_" + self.field.upper()

    @property
    def metavar(self) -> str:
        t = self.value_type
        if self.kind == "json":
            return "JSON"
        if self.kind == "list":
            return "ORIGIN" if self.field == "cors_origins" else "GLOB"
        if isinstance(t, type) and issubclass(t, enum.Enum):
            return "|".join(str(m.value) for m in t)
        if t is Path:
            return "PATH"
        if t is str:
            return "URL" if self.field in ("backend", "database_url") else "TEXT"
        for suffix, name in (("_ms", "MS"), ("_s", "SECONDS"), ("_bytes", "BYTES")):
            if self.field.endswith(suffix):
                return name
        return "NUMBER" if t is float else "INT"

    @property
    def default(self) -> str:
        """The default as an operator would write it in the variable."""
        return self.default_text(self.info.default)

    @staticmethod
    def default_text(value: Any) -> str:
        """``value`` as an operator would write it in the variable ("unset": None)."""
        if value is None:
            return "unset"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, enum.Enum):
            return str(value.value)
        if isinstance(value, Path) and not value.is_absolute():
            return f"./{value}"
        if isinstance(value, list | dict):
            return json.dumps(value) if value else "none"
        return str(value)

    @property
    def help(self) -> str:
        text = self.info.description or ""
        if self.kind == "list":
            text += " Repeatable."
        return text

    def parameter(self) -> inspect.Parameter:
        """The typer parameter of this flag; ``None`` when not given."""
        decls: tuple[str, ...]
        if self.kind == "flag":
            annotation: Any = bool | None
            decls = (f"{self.flag}/--no-{self.flag[2:]}",)
        elif self.kind == "list":
            annotation = list[str] | None
            decls = (self.flag,)
        elif self.kind == "json":
            annotation = str | None
            decls = (self.flag,)
        else:
            annotation = self.value_type | None
            decls = (self.flag,)
        option = typer.Option(
            *decls, help=self.help, metavar=None if self.kind == "flag" else self.metavar
        )
        return inspect.Parameter(
            self.field,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[annotation, option],
        )


def _value_type(annotation: Any) -> type:
    """The type a value takes: ``Path`` of ``Path | None``, ``list`` of ``list[str]``."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        (annotation,) = (a for a in get_args(annotation) if a is not NoneType)
    origin = get_origin(annotation)
    return origin if isinstance(origin, type) else annotation


def _kind(value_type: type) -> str:
    if value_type is bool:
        return "flag"
    if value_type is list:
        return "list"
    if value_type is dict:
        return "json"
    return "value"


def _options() -> tuple[Option, ...]:
    """Every field, heading by heading; one missing from ``PANELS`` is still a flag, under
    "Other" (a test fails on it, so it gets its heading)."""
    placed = [(panel, field) for panel, fields in PANELS.items() for field in fields]
    placed_fields = {field for _, field in placed}
    placed += [("Other", f) for f in Settings.model_fields if f not in placed_fields]
    options = []
    for panel, field in placed:
        info = Settings.model_fields[field]
        t = _value_type(info.annotation)
        options.append(Option(field, panel, _kind(t), t, info))
    return tuple(options)


OPTIONS = _options()


class FlagError(ValueError):
    """A flag's text the model cannot take (``--retention`` that is not JSON)."""


def overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the given flags set, by field name; a flag not given sets nothing."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        value = flags.get(option.field)
        if value is None or (option.kind == "list" and not value):
            continue
        if option.kind == "json":
            try:
                value = json.loads(value)
            except ValueError as e:
                raise FlagError(f"{option.flag}: not JSON ({e})") from None
        out[option.field] = value
    return out


def with_settings_flags(func: Callable[..., None]) -> Callable[..., None]:
    """``func`` (its own parameters and ``**flags``) with one typer parameter per setting
    added to its signature; each call passes them on in ``flags``."""
    own = [
        p
        for p in inspect.signature(func, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> None:
        func(**kwargs)

    own_kw = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*(o.parameter() for o in OPTIONS), *own_kw]
    )
    return wrapper
