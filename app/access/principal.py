"""Who is asking: credentials from a request, resolved to a principal holding a grant.

Credentials, in the order they are tried: ``Authorization: Bearer <credential>``; the query
parameters ``access_token`` (what EventSource can send) and ``_token`` (the Upstash
protocol's); last, the cookie named by ``XSTREAMS_AUTH_COOKIE`` (HttpOnly, so a page's scripts
never see it). A credential is the admin token (``--token``), an API key
(``xs_<id>_<secret>``) or a JWT; the first valid one wins.

The cookie is the one credential a browser sends by itself, with requests other sites make it
send (a link, a redirect, a form): cross-site request forgery. So it is read only where the
surface says it may (``cookie_ok``: GET under ``/v1``), it comes after the credentials a
client sends on purpose, and a principal it gives may write only when the request shows it
comes from a page the service trusts (``Principal.writes``): ``Sec-Fetch-Site: same-origin``,
which a browser sets and no page can forge, or an ``Origin`` on the CORS list. Otherwise it
may run only commands that do not write (``app.access.check``), whatever the method: the
consumer-group event stream is a GET, and it runs XREADGROUP.

With nothing configured — no token, no JWT key, no API key in the database — the service is
open (and protected mode keeps such a service on loopback): every request is the admin.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from http.cookies import CookieError, SimpleCookie
from urllib.parse import unquote_to_bytes

from app.access.grants import ADMIN, Grant
from app.access.keys import KeyRing
from app.access.prefix import NO_PREFIX, TenantPrefix
from app.access.rates import UNLIMITED, CredentialLimits
from app.access.tokens import JwtVerifier

__all__ = ["Authenticator", "Kind", "Principal"]

QUERY_CREDENTIALS = (b"access_token", b"_token")


class Kind(StrEnum):
    OPEN = "open"  # no credentials configured: the service is open
    TOKEN = "token"  # the admin token (--token)
    KEY = "key"  # an API key
    JWT = "jwt"  # a token the application minted


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    grant: Grant
    kind: Kind
    key_id: str | None = None  # API keys: what revocation and per-key limits follow
    expires_at_ms: int | None = None
    # Whether this request may run a command that writes. False for a cookie on a request
    # not shown to come from a trusted page: it may only read (module docstring).
    writes: bool = True
    jwt_identity: str | None = None  # JWTs: ``VerifiedToken.identity``
    # The credential's own limits (an API key's, a JWT's claim); the settings' defaults apply
    # where it sets none (app/api/rates.py).
    limits: CredentialLimits = UNLIMITED
    # The credential's key prefix (app/access/prefix.py): added to every name it sends,
    # removed from every name it sees; ``grant`` is already relative to it (``Grant.within``).
    prefix: str = ""

    @property
    def tenant(self) -> TenantPrefix:
        """The name mapping of this credential (the identity mapping without a prefix)."""
        return TenantPrefix(self.prefix) if self.prefix else NO_PREFIX

    @property
    def unrestricted(self) -> bool:
        """Whether every command passes the check (the admin, with nothing held back), so a
        surface may skip asking it per command."""
        return self.grant.admin and self.writes

    @property
    def scoped(self) -> bool:
        """An API key or a JWT: a credential handed to one client, which per-credential limits
        bound (the open mode and the admin token stand for every client alike)."""
        return self.kind in (Kind.KEY, Kind.JWT)

    @property
    def limit_key(self) -> str:
        """What per-credential limits count against: the API key, the JWT's subject."""
        return self.key_id or f"{self.kind.value}:{self.name}"

    @property
    def identity(self) -> str:
        """Who the credential is, whatever it may do now: an API key's id, a JWT's issuer and
        ``sub`` (a JWT without ``sub``: the token itself), the admin token. Idempotency-Keys
        are scoped by it; what a request may do is asked of the check, every time."""
        return self.key_id or self.jwt_identity or f"{self.kind.value}:{self.name}"


OPEN = Principal("open", ADMIN, Kind.OPEN)


class Authenticator:
    def __init__(
        self,
        *,
        token: str | None = None,
        keys: KeyRing | None = None,
        jwt: JwtVerifier | None = None,
        cookie: str | None = None,
        trusted_origins: Iterable[str] = (),
    ) -> None:
        self._token = token.encode() if token else None
        self.keys = keys if keys is not None else KeyRing()
        self._jwt = jwt
        self._cookie = cookie
        # Origins whose requests a cookie may authorize writes for: the CORS list ("*" is no
        # origin: it never vouches for a request).
        self._trusted = frozenset(o.encode("latin-1") for o in trusted_origins if o != "*")

    @property
    def enabled(self) -> bool:
        """Whether requests need credentials (any kind is configured or stored)."""
        return self._token is not None or self._jwt is not None or len(self.keys) > 0

    def authenticate(
        self,
        headers: list[tuple[bytes, bytes]],
        query: bytes,
        now_ms: int,
        *,
        cookie_ok: bool = False,
    ) -> Principal | None:
        """The caller's principal, or None (401): no credential, or none valid now."""
        if not self.enabled:
            return OPEN
        for credential in self._sent(headers, query):
            principal = self._resolve(credential, now_ms)
            if principal is not None:
                return principal
        if cookie_ok and self._cookie:
            for credential in self._cookies(headers):
                principal = self._resolve(credential, now_ms)
                if principal is not None:
                    return replace(principal, writes=self._trusted_request(headers))
        return None

    def _sent(self, headers: list[tuple[bytes, bytes]], query: bytes) -> list[bytes]:
        """The credentials a client sends on purpose: a bearer header, then the query's."""
        found: list[bytes] = []
        for name, value in headers:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() == b"bearer" and given.strip():
                    found.append(given.strip())
        if query:
            for pair in query.split(b"&"):
                name, _, value = pair.partition(b"=")
                if name in QUERY_CREDENTIALS and value:
                    found.append(unquote_to_bytes(value.replace(b"+", b" ")))
        return found

    def _cookies(self, headers: list[tuple[bytes, bytes]]) -> list[bytes]:
        found: list[bytes] = []
        for name, value in headers:
            if name == b"cookie":
                found.extend(self._from_cookie(value))
        return found

    def _trusted_request(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether the browser says the request comes from this origin, or from an origin on
        the CORS list. A browser sets both headers itself (a page cannot); a request with
        neither (an old browser, a script) is not trusted: it sends its credential instead."""
        fetch_site = [v for n, v in headers if n == b"sec-fetch-site"]
        origin = [v for n, v in headers if n == b"origin"]
        if fetch_site == [b"same-origin"]:
            return True
        return len(origin) == 1 and origin[0] in self._trusted

    def _from_cookie(self, raw: bytes) -> list[bytes]:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw.decode("latin-1"))
        except CookieError:
            return []
        morsel = jar.get(self._cookie or "")
        return [morsel.value.encode("latin-1")] if morsel is not None and morsel.value else []

    def _resolve(self, credential: bytes, now_ms: int) -> Principal | None:
        if self._token is not None and hmac.compare_digest(credential, self._token):
            return Principal("admin", ADMIN, Kind.TOKEN)
        if not credential.isascii():
            return None
        text = credential.decode("ascii")
        record = self.keys.find(text, now_ms)
        if record is not None:
            return Principal(
                record.name,
                record.grant.within(record.prefix),
                Kind.KEY,
                record.key_id,
                record.expires_at_ms,
                limits=record.limits,
                prefix=record.prefix,
            )
        if self._jwt is not None and JwtVerifier.looks_like(text):
            verified = self._jwt.verify(text, now_ms)
            if verified is not None:
                return Principal(
                    verified.subject,
                    verified.grant,
                    Kind.JWT,
                    None,
                    verified.expires_at_ms,
                    jwt_identity=verified.identity,
                    limits=verified.limits,
                    prefix=verified.prefix,
                )
        return None
