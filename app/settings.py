"""Service settings, read once by the app factory or the CLI (env prefix ``XSTREAMS_``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, NonNegativeInt, PositiveInt, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.access.quotas import QuotaError, StorageQuota
from app.access.rates import Rate, RateError
from app.engine.delivery import Retention
from app.engine.errors import CommandError
from app.observe.logs import LogFormat


class FsyncMode(StrEnum):
    """When a write's record reaches the database (``--fsync``), Redis's appendfsync."""

    ALWAYS = "always"  # the reply leaves only after the record is committed
    EVERYSEC = "everysec"  # reply at once; records committed within about a second
    OFF = "off"  # no journal: only snapshots (on journal size and on clean shutdown)


EMBEDDED = "embedded"
REDIS_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")


class Settings(BaseSettings):
    """Everything an operator can set; each field has an ``XSTREAMS_<NAME>`` variable and a
    ``xstreams serve`` flag (app/cli/serve_options.py), and its ``description`` is what both
    the ``serve --help`` text and docs/operations/settings.md say of it."""

    model_config = SettingsConfigDict(env_prefix="XSTREAMS_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Address to listen on.")
    port: int = Field(default=8000, description="TCP port to listen on.")
    # What stands behind the surfaces (docs/operations/scale-out.md). Credentials and TLS
    # options come in the URL, as redis-py reads them
    # (?ssl_cert_reqs=required&ssl_ca_certs=/path ...); a cluster URL names any reachable
    # nodes, the rest are discovered.
    backend: str = Field(
        default="embedded",
        description="embedded (the in-process engine), or a Redis URL:"
        " redis://[user:password@]host:port/db, rediss://... (TLS),"
        " redis+cluster://host:port,host:port or rediss+cluster://...",
    )
    # More than one needs a stateless backend: the embedded keyspace lives in one process.
    workers: PositiveInt = Field(
        default=1, description="Worker processes sharing the port (needs a Redis backend)."
    )
    wait_replicas: int = Field(
        default=0,
        ge=0,
        description="Redis backend: after each write, WAIT for this many replicas (0: don't);"
        " fewer confirmations answer 503 (the write itself was applied).",
    )
    wait_timeout_ms: PositiveInt = Field(
        default=1_000, description="Redis backend: the longest WAIT, in ms."
    )
    redis_block_connections: PositiveInt = Field(
        default=64,
        description="Redis backend: connections kept per process for blocking reads (BLOCK,"
        " long polls, SSE); past them a blocking read is refused at once.",
    )
    data_dir: Path = Field(
        default=Path("./data"),
        description="Folder of the default SQLite database: streams and API keys (with a"
        " Redis backend, the API keys only).",
    )
    token: str | None = Field(
        default=None,
        description="Admin bearer token every request must carry; unset leaves the service"
        " open (unless keys or JWTs are configured).",
    )
    # They decide which whole blocks approximate trimming (`~`) can drop, so they must match
    # Redis's to match its replies.
    stream_node_max_entries: int = Field(
        default=100, description="Redis's stream-node-max-entries: entries in one node."
    )
    stream_node_max_bytes: int = Field(
        default=4096, description="Redis's stream-node-max-bytes: bytes of one node."
    )
    idmp_max_producers: PositiveInt = Field(
        default=10_000,
        description="Producers one stream's idempotent appends (XADD IDMP) track; past it the"
        " least recent is forgotten (embedded backend).",
    )
    ds_max_producers: PositiveInt = Field(
        default=1_000,
        description="Durable Streams: producers one stream's record tracks (Producer-Id);"
        " past it the least recent is forgotten: it starts again at Producer-Seq 0.",
    )
    # Off by default: Redis 7.0 refuses `+` there, and xstreams answers as 7.0 unless told.
    # In front of Redis, the server decides.
    xread_last_entry: bool = Field(
        default=False,
        description="Embedded backend: XREAD's `+` ID reads each stream's last entry (Redis"
        " 7.4 and later).",
    )
    max_body_bytes: int = Field(
        default=16 * 1024 * 1024,
        description="Largest request body the command endpoint accepts, in bytes.",
    )
    log_level: str = Field(
        default="info", description="Log level: critical, error, warning, info, debug, trace."
    )
    log_format: LogFormat = Field(
        default=LogFormat.TEXT,
        description="Log lines as text (uvicorn's style) or one JSON object a line.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the database, e.g. postgresql+psycopg://user@host/db;"
        " unset: SQLite at <data-dir>/xstreams.db. With a Redis backend it holds the API keys"
        " only: give every front-end and `xstreams keys` the same one.",
    )
    fsync: FsyncMode = Field(
        default=FsyncMode.ALWAYS,
        description="always: reply after the commit; everysec: commit within a second; off:"
        " snapshots only.",
    )
    snapshot_after_bytes: int = Field(
        default=64 * 1024 * 1024,
        description="Take a snapshot once this many bytes of records were appended after the"
        " newest one (the journal it covers is then deleted).",
    )
    # A restart replays each record after the newest snapshot, at a cost per record whatever
    # its size, so many small records (kept Idempotency-Key responses, XADD IDMP) must not
    # wait for the byte trigger.
    snapshot_after_records: PositiveInt = Field(
        default=500_000,
        description="... or once this many records were appended after the newest one.",
    )
    snapshot_on_shutdown: bool = Field(
        default=True,
        description="Take a snapshot on clean shutdown, so the next start replays (almost)"
        " nothing.",
    )

    # Server-Sent Events (/v1/.../events).
    sse_heartbeat_ms: int = Field(
        default=15_000,
        description="Event streams: a heartbeat comment after this long without an event, so"
        " proxies keep idle streams open (ms).",
    )
    sse_retry_ms: int = Field(
        default=2_000,
        description="Event streams: the retry hint, how long EventSource waits before"
        " reconnecting (ms).",
    )
    sse_max_connections: int = Field(
        default=10_000, description="Concurrent event streams; past it 429."
    )
    sse_max_lifetime_ms: int = Field(
        default=0,
        description="An event stream is ended after this long (0: never); the client"
        " reconnects with Last-Event-ID (ms).",
    )
    # Memory stays bounded, and nothing is lost: a slow subscriber reads from its cursor.
    sse_send_buffer_bytes: int = Field(
        default=1024 * 1024,
        description="Live events buffered for one subscriber; past it, it reads from its own"
        " cursor at the speed of its socket.",
    )
    sse_send_timeout_ms: int = Field(
        default=10_000,
        description="A subscriber whose socket takes nothing for this long is disconnected"
        " (it resumes with Last-Event-ID) (ms).",
    )

    # Connections (``xstreams serve``; see app/server/connections.py).
    header_timeout_ms: int = Field(
        default=10_000,
        gt=0,
        description="A request's head must arrive within this long of its first byte (or of"
        " the connection opening): else 408 and close (ms).",
    )
    # A whole-body deadline (as Go's ReadTimeout), so a trickle cannot stretch it.
    body_timeout_ms: int = Field(
        default=30_000,
        gt=0,
        description="A request's body must arrive in full within this long of its head: else"
        " 408 and close (ms).",
    )
    keepalive_timeout_ms: int = Field(
        default=5_000,
        gt=0,
        description="An idle connection between two requests is closed after this long (ms).",
    )
    # The default leaves room for sse_max_connections event streams plus 2,000 other clients;
    # the server raises its open-file limit to fit (and lowers this, with a warning, if it
    # cannot).
    max_connections: int = Field(
        default=12_000,
        gt=0,
        description="Open connections served at once; one past it gets 503 and is closed.",
    )

    # Limits: the work one request may ask for, so no request holds the event loop that every
    # client shares. Going past one is refused whole, with an error naming the limit
    # (docs/operations/deployment.md, "Limits"); nothing is half done.
    max_pipeline_commands: PositiveInt = Field(
        default=10_000, description="Commands in one /pipeline or /multi-exec body."
    )
    # The 16 MiB body holds ~5 million.
    max_command_args: PositiveInt = Field(
        default=1_000_000, description="Arguments of one command, its name included."
    )
    max_read_keys: PositiveInt = Field(
        default=1_000,
        description="Streams one XREAD / XREADGROUP, /v1/read or /v1/events may name.",
    )
    max_reply_entries: PositiveInt = Field(
        default=10_000,
        description="Entries in one command-endpoint reply of XRANGE / XREVRANGE / XREAD /"
        " XREADGROUP; past it, an ERR asking for COUNT.",
    )
    # Decoding and encoding hold the event loop (docs/operations/deployment.md, "Limits").
    max_restore_bytes: PositiveInt = Field(
        default=131_072,
        description="Bytes of one RESTORE payload (and of what it expands to) and of one DUMP"
        " reply.",
    )
    max_restore_node_entries: PositiveInt = Field(
        default=10_000,
        description="Entries of one node of a RESTORE payload, deleted ones included.",
    )
    # XINFO GROUPS / CONSUMERS list them whole (within max_reply_entries); /v1 in pages.
    max_stream_groups: PositiveInt = Field(
        default=1_000,
        description="Consumer groups one stream may hold; one more is refused (409 on /v1).",
    )
    max_group_consumers: PositiveInt = Field(
        default=10_000,
        description="Consumers one group may hold; one more is refused (409 on /v1).",
    )
    rest_default_count: PositiveInt = Field(
        default=100, description="REST: the entries a range or read gives without `count`."
    )
    rest_max_count: PositiveInt = Field(
        default=1_000,
        description="REST: the largest `count` (and XINFO STREAM FULL's) accepted.",
    )
    # A short one runs whole, so its records share one group commit.
    pipeline_slice_ms: PositiveInt = Field(
        default=5,
        description="A /pipeline that held the event loop this long lets other requests run,"
        " then goes on (ms).",
    )

    # Access (docs/operations/access.md). The admin token is ``token``; API keys live in the
    # database (``xstreams keys``). JWTs an application mints: HS256 with ``jwt_secret``, or RS256 /
    # ES256 with the PEM public key in ``jwt_public_key_file``.
    jwt_secret: str | None = Field(
        default=None, description="HS256 secret of the JWTs your application mints."
    )
    jwt_public_key_file: Path | None = Field(
        default=None, description="PEM public key (a file) of RS256 / ES256 JWTs."
    )
    jwt_audience: str | None = Field(
        default=None, description="When set, a JWT's `aud` must equal it."
    )
    jwt_max_lifetime_ms: PositiveInt = Field(
        default=24 * 60 * 60 * 1000,
        description="The furthest a JWT's `exp` may lie ahead; one minted for longer is"
        " refused (ms; default a day).",
    )
    # An HttpOnly cookie the application sets for its pages; read for GET requests under /v1
    # only (reads and event streams: a cookie never authorizes a write).
    auth_cookie: str | None = Field(
        default="xstreams_token",
        description="Name of a cookie that may carry an API key or JWT (GET under /v1 only).",
    )
    keys_refresh_ms: PositiveInt = Field(
        default=1_000, description="API keys are read again from the database this often (ms)."
    )
    cors_origins: list[str] = Field(
        default=[],
        description="Browser origins allowed to call the API (CORS, with credentials); `*`"
        " alone: every origin, without credentials.",
    )
    # Protected mode, as Redis's.
    insecure_no_auth: bool = Field(
        default=False,
        description="Serve a non-loopback address with no credentials configured anyway.",
    )
    ssl_certfile: Path | None = Field(
        default=None, description="TLS: serve HTTPS with this certificate chain (PEM file)."
    )
    ssl_keyfile: Path | None = Field(
        default=None, description="TLS: the certificate's private key (PEM file)."
    )
    # app/api/holds; the global caps (sse_max_connections, max_connections) bound the rest.
    sse_max_connections_per_key: PositiveInt = Field(
        default=100,
        description="Event streams, long polls and blocking reads one API key or JWT subject"
        " may hold open together; past it 429.",
    )

    # app/api/fairness.py: admission by turns once the process is busy.
    fair_slots: NonNegativeInt = Field(
        default=16,
        description="Requests admitted per turn of the event loop; past it requests queue"
        " per credential and the next turns take credentials round-robin, so one flooding"
        " client cannot starve the others. 16 leaves one client on 50 connections as fast as"
        " without it; 1 is fairest, at 10-20% of a single client's rate (bench/REPORT.md,"
        " workload 10). 0: no limit, first come first served.",
    )
    fair_queue_per_key: PositiveInt = Field(
        default=1_000,
        description="Requests one credential may have queued for a slot; past it 429 with"
        " Retry-After.",
    )

    # app/api/rates.py: requests per credential (app/access/rates.py writes how).
    rate_requests: str | None = Field(
        default=None,
        description="Requests an API key or JWT may make, where it sets no rate of its own"
        " (`xstreams keys create --rate`, the JWT's `xstreams_limits` claim): 100/s,"
        " 6000/min, 100/s:300 (300 at once). Past it 429 with Retry-After. Default: none.",
    )
    rate_requests_admin: str | None = Field(
        default=None,
        description="The same for the admin token and an open service (no credentials"
        " configured), which are not limited by default.",
    )
    rate_bytes: str | None = Field(
        default=None,
        description="Bytes an API key or JWT may append (field names and values, UTF-8), where"
        " it sets no rate of its own (`xstreams keys create --rate-bytes`, the claim's"
        " `bytes`): 1M/s, 100M/min:10M. Past it the append is refused whole, 429. Default:"
        " none.",
    )
    rate_bytes_admin: str | None = Field(
        default=None,
        description="The same for the admin token and an open service; default: none.",
    )
    rate_entries: str | None = Field(
        default=None,
        description="Entries an API key or JWT may read (XRANGE, XREAD, REST pages, event"
        " streams, Durable Streams reads), where it sets no rate of its own (`--rate-entries`,"
        " the claim's `entries`): 1000/s, 100k/min. A read is spent after it ran and may"
        " leave a debt; the next is refused (429) until the rate repaid it. Default: none.",
    )
    rate_entries_admin: str | None = Field(
        default=None,
        description="The same for the admin token and an open service; default: none.",
    )
    storage_quota: str | None = Field(
        default=None,
        description="What the streams under an API key's or JWT's tenant prefix may hold, where"
        " the credential sets no quota of its own (`xstreams keys create --storage`, the JWT's"
        " `xstreams_limits` claim): entries=1000000,bytes=1GB (either part). Past it an append"
        " is refused with 507. A credential without a prefix is held to none. Default: none.",
    )
    storage_refresh_s: float = Field(
        default=5.0,
        gt=0,
        description="How often a prefix's storage is measured for its quota, in seconds; the"
        " appends a front-end serves in between are counted as they go.",
    )

    # Metrics (GET /metrics). A label per group could be unbounded: none by default.
    metrics_group_streams: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="Globs of the streams whose consumer groups get series of their own"
        " (pending, lag). Env: a JSON list or globs separated by commas.",
    )
    metrics_max_groups: PositiveInt = Field(
        default=1_000, description="At most this many consumer groups get series."
    )
    idempotency_window_s: PositiveInt = Field(
        default=24 * 60 * 60,
        description="Idempotency-Key: how long a kept response answers retries (seconds).",
    )
    # Embedded backend: past either bound the oldest go first, before their time.
    idempotency_max_keys: PositiveInt = Field(
        default=100_000,
        description="Idempotency-Key: responses kept at most (embedded backend).",
    )
    idempotency_max_bytes: PositiveInt = Field(
        default=64 * 1024 * 1024,
        description="Idempotency-Key: bytes of kept responses at most (embedded backend).",
    )

    # Retention (docs/concepts/delivery-policies.md): the first glob that matches
    # applies, and a stream's own retention (PUT /v1/streams/{s}/retention) wins. A step
    # smaller than a node (stream_node_max_entries) trims nothing: `~` drops whole nodes.
    retention: dict[str, dict[str, int]] = Field(
        default={},
        description="Default retention of the streams whose name matches a glob, as JSON:"
        ' `{"logs-*": {"max_age_ms": 86400000}}` (keys `max_age_ms`, `max_len`, `max_bytes`).',
    )
    retention_interval_s: float = Field(
        default=1.0, gt=0, description="Retention trims every stream this often (seconds)."
    )
    retention_step: PositiveInt = Field(
        default=1_000,
        description="Entries trimmed at most per step (XTRIM ... LIMIT), other requests"
        " running between steps.",
    )

    # Webhooks (docs/surfaces/webhooks.md, app/delivery/outbound.py): where they may POST.
    webhook_allow_hosts: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="Host name globs webhooks may POST to (none: no destination). Env: a"
        " JSON list or globs separated by commas.",
    )
    webhook_allow_http: bool = Field(
        default=False, description="Let webhooks POST over plain http (else https only)."
    )
    webhook_allow_private: bool = Field(
        default=False,
        description="Let webhooks reach loopback, private and link-local addresses (never the"
        " cloud metadata ones).",
    )
    # Each webhook also reads its group's policy and its orphaned entries again then.
    webhook_refresh_s: float = Field(
        default=5.0, gt=0, description="Webhooks are read again this often (seconds)."
    )
    webhook_block_ms: PositiveInt = Field(
        default=1_000, description="How long one read of a webhook waits for entries (ms)."
    )
    webhook_retry_after_max_ms: int = Field(
        default=60_000,
        ge=0,
        description="The longest Retry-After a receiver gets honoured (ms).",
    )

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        scheme, sep, _ = value.partition("://")
        if value == EMBEDDED or (sep and scheme.lower() in REDIS_SCHEMES):
            return value
        raise ValueError(
            f"unknown backend {scheme!r}: use 'embedded' or a URL starting"
            f" with {', '.join(s + '://' for s in REDIS_SCHEMES)}"
        )

    @field_validator("cors_origins")
    @classmethod
    def _cors(cls, value: list[str]) -> list[str]:
        # "*" is served as "*" without credentials (a browser never pairs the two); beside
        # named origins it would be unclear which of the two a page gets.
        if "*" in value and len(value) > 1:
            raise ValueError(
                "'*' allows every origin, without credentials: give it alone, or name the"
                " origins that may call with credentials"
            )
        return value

    @field_validator(
        "rate_requests",
        "rate_requests_admin",
        "rate_bytes",
        "rate_bytes_admin",
        "rate_entries",
        "rate_entries_admin",
    )
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                Rate.parse(value)
            except RateError as e:
                raise ValueError(str(e)) from None
        return value

    @field_validator("storage_quota")
    @classmethod
    def _storage_quota(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                StorageQuota.parse(value)
            except QuotaError as e:
                raise ValueError(str(e)) from None
        return value

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        for glob, doc in value.items():
            try:
                Retention.from_json(doc)
            except CommandError as e:
                raise ValueError(f"retention for {glob!r}: {e.text}") from None
        return value

    def retention_defaults(self) -> list[tuple[str, Retention]]:
        """The glob-wide default retentions, in the order they are tried."""
        return [(glob, Retention.from_json(doc)) for glob, doc in self.retention.items()]

    @property
    def embedded(self) -> bool:
        """Whether the in-process engine serves (not a Redis server or cluster)."""
        return self.backend == EMBEDDED

    @field_validator("metrics_group_streams", "webhook_allow_hosts", mode="before")
    @classmethod
    def _globs(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                return json.loads(text)
            return [g.strip() for g in text.split(",") if g.strip()]
        return value

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to SQLite (WAL) under ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'xstreams.db').resolve()}"
