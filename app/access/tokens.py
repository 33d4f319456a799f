"""JSON Web Tokens minted by an application that already has users (PyJWT).

The application signs, per browser session, a short-lived token whose ``xstreams`` claim is a
grant (``{"read": ["orders-*"], "consume": [...], "write": [...], "admin": false}``); xstreams
verifies the signature (HS256 with a shared secret, or RS256 / ES256 with the application's
public key), ``exp`` (required: a token that never expires is refused), ``nbf`` and, when
configured, ``aud``. The token is never stored; its ``sub`` names the caller in logs.

An optional ``xstreams_limits`` claim sets the token's own limits (``{"requests":
"100/s", "bytes": "1M/s", "entries": "1000/s"}``, app/access/rates.py); a malformed one
refuses the token, as a malformed grant does. An optional ``xstreams_prefix`` claim
(``"tenant-a:"``) binds the token to a key prefix (app/access/prefix.py); the grant's globs
are then relative to it, and a grant of ``admin`` with a prefix refuses the token.

A token's identity (``VerifiedToken.identity``: whose Idempotency-Keys it uses) is its
issuer and ``sub``; a token without ``sub`` names nobody, so it is its own identity (a
digest of the token): two such tokens never share what one of them kept.

``exp`` must be an integer (RFC 7519's NumericDate, as every minting library writes it):
PyJWT alone also takes ``"99999999999"`` and ``1e300``. And it may lie no further ahead than
``max_lifetime_ms`` (``XSTREAMS_JWT_MAX_LIFETIME_MS``, a day by default): a token is a
bearer credential nobody can revoke, so one minted by mistake for years must not work for
years.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import jwt
import orjson

from app.access.grants import Grant, GrantError
from app.access.prefix import PrefixError, check_prefix
from app.access.rates import UNLIMITED, CredentialLimits

__all__ = ["CLAIM", "JwtVerifier", "VerifiedToken"]

CLAIM = "xstreams"
LIMITS_CLAIM = "xstreams_limits"  # optional: {"requests": "100/s:300", "bytes": "1M/s", ...}
PREFIX_CLAIM = "xstreams_prefix"  # optional: "tenant-a:" (app/access/prefix.py)
LEEWAY_S = 5  # clock skew between the application and xstreams
MAX_LIFETIME_MS = 24 * 60 * 60 * 1000  # the default of XSTREAMS_JWT_MAX_LIFETIME_MS


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    subject: str
    grant: Grant
    expires_at_ms: int
    identity: str  # issuer and ``sub``, or the token's digest when it has no ``sub``
    limits: CredentialLimits = UNLIMITED  # the ``xstreams_limits`` claim
    prefix: str = ""  # the ``xstreams_prefix`` claim: the grant is already relative to it


class JwtVerifier:
    def __init__(
        self,
        *,
        secret: str | None = None,
        public_key: str | None = None,
        audience: str | None = None,
        max_lifetime_ms: int = MAX_LIFETIME_MS,
    ) -> None:
        if secret is not None and public_key is None:
            self._key, self._algorithms = secret, ["HS256"]
        elif public_key is not None and secret is None:
            self._key, self._algorithms = public_key, ["RS256", "ES256"]
        else:
            raise ValueError("a JWT verifier needs exactly one of a secret or a public key")
        self._audience = audience
        self._max_lifetime_ms = max_lifetime_ms

    @staticmethod
    def looks_like(text: str) -> bool:
        return text.count(".") == 2

    def verify(self, token: str, now_ms: int) -> VerifiedToken | None:
        """The token's grant, or None when it is not valid now (bad signature, expired, not
        yet valid, wrong audience, no or malformed grant claim, an ``exp`` that is not an
        integer or lies beyond the maximum lifetime from ``now_ms``)."""
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=self._algorithms,
                audience=self._audience,
                leeway=LEEWAY_S,
                options={"require": ["exp"], "verify_aud": self._audience is not None},
            )
            grant = Grant.from_json(claims.get(CLAIM))
            prefix = check_prefix(claims[PREFIX_CLAIM]) if PREFIX_CLAIM in claims else ""
            grant = grant.within(prefix)
            limits = (
                CredentialLimits.from_json(claims[LIMITS_CLAIM])
                if LIMITS_CLAIM in claims
                else CredentialLimits()
            )
            if limits.storage is not None and not prefix:
                raise ValueError("a storage quota counts under a prefix: xstreams_prefix")
        except (jwt.PyJWTError, GrantError, PrefixError, ValueError):
            return None
        exp = claims["exp"]
        if type(exp) is not int:  # not bool, str or float
            return None
        expires_at_ms = exp * 1000
        if expires_at_ms > now_ms + self._max_lifetime_ms + LEEWAY_S * 1000:
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str):
            digest = hashlib.sha256(token.encode()).hexdigest()
            return VerifiedToken("jwt", grant, expires_at_ms, f"jwt-token:{digest}", limits, prefix)
        issuer = claims.get("iss")
        named = orjson.dumps([issuer if isinstance(issuer, str) else None, subject])
        return VerifiedToken(subject, grant, expires_at_ms, f"jwt:{named.decode()}", limits, prefix)
