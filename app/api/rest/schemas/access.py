"""The caller as the service sees it (``GET /v1/whoami``): who, which grant, and what it may
do on the streams asked about."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.access import Grant, Principal, Verb, verbs_on
from app.access.prefix import TenantPrefix


class GrantDoc(BaseModel):
    """Each verb with the stream globs it is granted on; ``admin`` holds every verb everywhere,
    ``metrics`` may scrape ``/metrics`` (docs/operations/access.md)."""

    read: list[str]
    consume: list[str]
    write: list[str]
    admin: bool
    metrics: bool


class StreamAccess(BaseModel):
    """What the caller may do on one stream: what the permission check will decide."""

    name: str
    read: bool
    consume: bool
    write: bool


class LimitUsage(BaseModel):
    """One limit of a credential and where it stands now (app/access/rates.py)."""

    policy: str = Field(description="`requests`, `bytes` (appended) or `entries` (read).")
    rate: str = Field(description="The rate: `100/s`, `1000000/s:5000000` (a burst).")
    remaining: int = Field(
        description="What may be spent now; 0 also while a read's debt is being repaid."
    )
    reset_ms: int = Field(description="Milliseconds until the whole burst is back.")


class KeyUsage(BaseModel):
    """An API key's limits and what is left of them (the admin's view)."""

    name: str
    expires_at_ms: int | None
    limits: list[LimitUsage]


class KeyUsageList(BaseModel):
    """Every API key held to a limit, by name."""

    keys: list[KeyUsage]


class Whoami(BaseModel):
    """The credential's principal: its name, kind, grant and expiry."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "dashboard",
                    "kind": "key",
                    "grant": {
                        "read": ["orders-*"],
                        "consume": ["orders-*"],
                        "write": [],
                        "admin": False,
                        "metrics": False,
                    },
                    "expires_at_ms": 1767225600000,
                    "rate": "100/s:300",
                    "prefix": "",
                    "limits": [
                        {
                            "policy": "requests",
                            "rate": "100/s:300",
                            "remaining": 299,
                            "reset_ms": 10,
                        }
                    ],
                    "streams": [
                        {"name": "orders-eu", "read": True, "consume": True, "write": False}
                    ],
                }
            ]
        }
    )

    name: str = Field(description="The key's name, the JWT's subject, `admin` or `open`.")
    kind: str = Field(
        description="`open` (no credentials configured), `token` (the admin token), `key` (an "
        "API key) or `jwt`."
    )
    grant: GrantDoc
    expires_at_ms: int | None = Field(description="When the credential stops working.")
    rate: str | None = Field(
        default=None,
        description="The requests it may make (`100/s`, `100/s:300`: 300 at once), its own or"
        " the service's default; null: not limited. Each response to a limited credential"
        " says what is left (`RateLimit`).",
    )
    limits: list[LimitUsage] = Field(
        default_factory=list,
        description="Each limit the credential is held to (requests, bytes appended, entries"
        " read), its own or the service's default, and what is left of it now; empty: not"
        " limited.",
    )
    streams: list[StreamAccess] = Field(description="One row per `stream` asked about.")
    prefix: str = Field(
        default="",
        description="The credential's key prefix: added to every stream name it sends and"
        " removed from every name it sees; its grant's globs are relative to it. Empty: none.",
    )


def _grant(g: Grant, tenant: TenantPrefix) -> GrantDoc:
    """The grant as the credential holds it: its globs relative to its prefix."""
    return GrantDoc(
        read=[tenant.unglob(p) for p in g.read],
        consume=[tenant.unglob(p) for p in g.consume],
        write=[tenant.unglob(p) for p in g.write],
        admin=g.admin,
        metrics=g.metrics,
    )


def whoami(
    principal: Principal,
    streams: list[str],
    rate: str | None = None,
    limits: list[LimitUsage] | None = None,
) -> Whoami:
    rows = []
    for name in streams:
        verbs = verbs_on(principal.grant, principal.tenant.inward(name))
        rows.append(
            StreamAccess(
                name=name,
                read=Verb.READ in verbs,
                consume=Verb.CONSUME in verbs,
                write=Verb.WRITE in verbs,
            )
        )
    return Whoami(
        name=principal.name,
        kind=principal.kind.value,
        grant=_grant(principal.grant, principal.tenant),
        expires_at_ms=principal.expires_at_ms,
        rate=rate,
        limits=limits or [],
        streams=rows,
        prefix=principal.prefix,
    )
