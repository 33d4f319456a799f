"""Service settings, read once by the app factory or the CLI (env prefix ``XSTREAMS_``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PositiveInt, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

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
    """Everything an operator can set; each field has an ``XSTREAMS_<NAME>`` variable."""

    model_config = SettingsConfigDict(env_prefix="XSTREAMS_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    # What stands behind the surfaces (README "Scale out"): "embedded" (the in-process engine,
    # durable through ``database_url``), or a Redis URL: redis://[user:password@]host:port/db,
    # rediss://... (TLS), redis+cluster://host:port,host:port (Redis Cluster; any reachable
    # nodes, the rest are discovered), rediss+cluster://... Credentials and TLS options come
    # in the URL, as redis-py reads them (?ssl_cert_reqs=required&ssl_ca_certs=/path ...).
    backend: str = "embedded"
    # Worker processes sharing the listening socket. More than one needs a stateless backend
    # (Redis): the embedded keyspace lives in one process.
    workers: PositiveInt = 1
    # Redis backend: after each write, WAIT for this many replicas (0: don't), at most
    # ``wait_timeout_ms``; fewer confirmations answer 503 (the write itself was applied).
    wait_replicas: int = Field(default=0, ge=0)
    wait_timeout_ms: PositiveInt = 1_000
    # Redis backend: connections kept for blocking reads (XREAD / XREADGROUP BLOCK, long
    # polls, SSE) per process; past them a blocking read is refused at once with an error.
    redis_block_connections: PositiveInt = 64
    data_dir: Path = Path("./data")
    # Bearer token required by every request when set; None leaves the service open.
    token: str | None = None
    # Redis's stream-node-max-entries / stream-node-max-bytes: they decide which whole
    # blocks approximate trimming (`~`) can drop, so they must match Redis to match its replies.
    stream_node_max_entries: int = 100
    stream_node_max_bytes: int = 4096
    # Producers one stream's idempotent appends (XADD IDMP, Redis 8.6) may track; past it the
    # one that appended least recently is forgotten (embedded backend; Redis has no cap).
    idmp_max_producers: PositiveInt = 10_000
    # Embedded backend: XREAD's `+` ID reads each stream's last entry (Redis 7.4 and later).
    # Off by default: Redis 7.0 refuses `+` there, and xstreams answers as 7.0 unless told.
    # In front of Redis, the server decides.
    xread_last_entry: bool = False
    # Largest request body accepted by the command endpoint, in bytes.
    max_body_bytes: int = 16 * 1024 * 1024
    log_level: str = "info"
    # Log lines as text (uvicorn's style) or one JSON object a line (``--log-format json``).
    log_format: LogFormat = LogFormat.TEXT
    # SQLAlchemy URL of the database; None means SQLite at <data_dir>/xstreams.db.
    # PostgreSQL: postgresql+psycopg://user@host:5432/dbname
    database_url: str | None = None
    fsync: FsyncMode = FsyncMode.ALWAYS
    # A snapshot is taken in the background once this many bytes of records were appended
    # after the newest one; the journal rows it covers are then deleted.
    snapshot_after_bytes: int = 64 * 1024 * 1024
    # ... or once this many records were: a restart replays each record after the newest
    # snapshot, at a cost per record whatever its size, so many small records (kept
    # Idempotency-Key responses, XADD IDMP) must not wait for the byte trigger.
    snapshot_after_records: PositiveInt = 500_000
    # Take a snapshot on clean shutdown, so the next start replays (almost) nothing.
    snapshot_on_shutdown: bool = True

    # Server-Sent Events (/v1/.../events). A heartbeat comment goes out after this long without
    # an event, so proxies keep idle streams open; the retry hint tells EventSource how long to
    # wait before reconnecting.
    sse_heartbeat_ms: int = 15_000
    sse_retry_ms: int = 2_000
    # Concurrent event streams beyond this are refused with 429.
    sse_max_connections: int = 10_000
    # A stream is ended after this long (0: never); the client reconnects with Last-Event-ID.
    sse_max_lifetime_ms: int = 0
    # Live events buffered for one subscriber; past it, the subscriber reads from its own
    # cursor at the speed of its socket instead (memory stays bounded, nothing is lost).
    sse_send_buffer_bytes: int = 1024 * 1024
    # A subscriber whose socket takes nothing for this long is disconnected (it resumes with
    # Last-Event-ID).
    sse_send_timeout_ms: int = 10_000

    # Connections (``xstreams serve``; see app/cli/connections.py). A request's head (request
    # line and headers) must arrive within this long of its first byte, or of the connection
    # opening for the first request: else 408 and the connection is closed.
    header_timeout_ms: int = Field(default=10_000, gt=0)
    # A request's body must arrive in full within this long of its head: else 408 and close.
    # A whole-body deadline (as Go's ReadTimeout), so a trickle cannot stretch it.
    body_timeout_ms: int = Field(default=30_000, gt=0)
    # An idle connection between two requests is closed after this long (uvicorn's keep-alive).
    keepalive_timeout_ms: int = Field(default=5_000, gt=0)
    # Open connections served at once; a connection past it gets 503 and is closed. The
    # default leaves room for sse_max_connections event streams plus 2,000 other clients; the
    # server raises its open-file limit to fit (and lowers this, with a warning, if it cannot).
    max_connections: int = Field(default=12_000, gt=0)

    # Limits: the work one request may ask for, so no request holds the event loop that every
    # client shares. Going past one is refused whole, with an error naming the limit
    # (README, "Limits"); nothing is half done.
    # Commands in one /pipeline or /multi-exec body.
    max_pipeline_commands: PositiveInt = 10_000
    # Arguments of one command, its name included (the 16 MiB body holds ~5 million).
    max_command_args: PositiveInt = 1_000_000
    # Streams one XREAD / XREADGROUP, one /v1/read or one /v1/events may name.
    max_read_keys: PositiveInt = 1_000
    # Entries in one command-endpoint reply of XRANGE / XREVRANGE / XREAD / XREADGROUP:
    # past it the command is refused with an ERR asking for COUNT.
    max_reply_entries: PositiveInt = 10_000
    # Bytes of one RESTORE payload and of what its strings expand to, and of what one DUMP
    # may answer: decoding and encoding hold the event loop (README, "Limits").
    max_restore_bytes: PositiveInt = 131_072
    # Entries of one node of a RESTORE payload, deleted ones included (Redis's nodes: 100).
    max_restore_node_entries: PositiveInt = 10_000
    # Consumer groups one stream may hold, and consumers one group may hold: one more is
    # refused (409 on /v1). XINFO GROUPS / CONSUMERS list them whole (within
    # max_reply_entries); /v1 lists them in pages.
    max_stream_groups: PositiveInt = 1_000
    max_group_consumers: PositiveInt = 10_000
    # REST pages: the entries a range or read gives without `count`, and the largest `count`
    # accepted there and by XINFO STREAM FULL over REST.
    rest_default_count: PositiveInt = 100
    rest_max_count: PositiveInt = 1_000
    # A /pipeline that has held the event loop this long lets other requests run, then goes
    # on (a short one runs whole, so its records share one group commit).
    pipeline_slice_ms: PositiveInt = 5

    # Access (README "Access"). The admin token is ``token``; API keys live in the database
    # (``xstreams keys``) and are re-read every ``keys_refresh_ms``. JWTs an application mints:
    # HS256 with ``jwt_secret``, or RS256 / ES256 with the PEM public key in
    # ``jwt_public_key_file``; ``aud`` must equal ``jwt_audience`` when it is set.
    jwt_secret: str | None = None
    jwt_public_key_file: Path | None = None
    jwt_audience: str | None = None
    # The furthest a JWT's ``exp`` may lie ahead: a token minted for longer is refused (401).
    jwt_max_lifetime_ms: PositiveInt = 24 * 60 * 60 * 1000
    # The cookie that may carry a credential (API key or JWT), an HttpOnly cookie the
    # application sets for its pages; read for GET requests under /v1 only (reads and event
    # streams: a cookie never authorizes a write). None: no cookie is read.
    auth_cookie: str | None = "xstreams_token"
    keys_refresh_ms: PositiveInt = 1_000
    # Browser origins allowed to call the API (CORS, credentials included); none by default.
    # ["*"] alone: every origin, without credentials (README "Access", CORS).
    cors_origins: list[str] = []
    # Protected mode, as Redis's: a non-loopback host with no credentials configured refuses
    # to start unless this is set.
    insecure_no_auth: bool = False
    # TLS: serve HTTPS with this certificate chain and private key (PEM files).
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    # Event streams, REST long polls and blocking reads (XREAD / XREADGROUP BLOCK) one API
    # key or JWT subject may hold open together; past it 429 with Retry-After (app/api/holds).
    # The global caps (sse_max_connections, max_connections) bound everything else.
    sse_max_connections_per_key: PositiveInt = 100

    # Metrics (GET /metrics). Per consumer group series (pending, lag) only for the streams
    # matching one of these globs (none by default: a label per group could be unbounded),
    # and at most ``metrics_max_groups`` of them. The variable takes a JSON list or globs
    # separated by commas: XSTREAMS_METRICS_GROUP_STREAMS='orders-*,billing'.
    metrics_group_streams: Annotated[list[str], NoDecode] = []
    metrics_max_groups: PositiveInt = 1_000
    # Idempotency-Key: how long a kept response answers retries, and (embedded backend) the
    # budget of kept responses: past either bound the oldest go first, before their time.
    idempotency_window_s: PositiveInt = 24 * 60 * 60
    idempotency_max_keys: PositiveInt = 100_000
    idempotency_max_bytes: PositiveInt = 64 * 1024 * 1024

    # Retention (README "Delivery policies and retention"): a default for every stream whose
    # name matches a glob, as a JSON object of glob -> {"max_age_ms", "max_len", "max_bytes"}
    # (XSTREAMS_RETENTION='{"logs-*": {"max_age_ms": 86400000}}'); the first glob that
    # matches applies, and a stream's own retention (PUT /v1/streams/{s}/retention) wins.
    # Every ``retention_interval_s`` the service trims each such stream in steps of at most
    # ``retention_step`` entries (XTRIM ... LIMIT), letting other requests run between steps.
    # A step smaller than a node (stream_node_max_entries) trims nothing: `~` drops whole nodes.
    retention: dict[str, dict[str, int]] = {}
    retention_interval_s: float = Field(default=1.0, gt=0)
    retention_step: PositiveInt = 1_000

    # Webhooks (README "Webhooks", app/delivery/outbound.py): where they may POST. Host name
    # globs (none: no destination allowed; XSTREAMS_WEBHOOK_ALLOW_HOSTS='hooks.example.com,
    # *.example.net'), https only unless ``webhook_allow_http``, public addresses only unless
    # ``webhook_allow_private`` (loopback, private, link-local; never the cloud metadata ones).
    webhook_allow_hosts: Annotated[list[str], NoDecode] = []
    webhook_allow_http: bool = False
    webhook_allow_private: bool = False
    # How often the runner reads the webhooks again (and each webhook its group's policy and
    # its orphaned entries), how long one read of a webhook waits for entries, and the
    # longest Retry-After a receiver gets honoured.
    webhook_refresh_s: float = Field(default=5.0, gt=0)
    webhook_block_ms: PositiveInt = 1_000
    webhook_retry_after_max_ms: int = Field(default=60_000, ge=0)

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
