"""JSON Web Tokens minted by an application that already has users (PyJWT).

The application signs, per browser session, a short-lived token whose ``xstreams`` claim is a
grant (``{"read": ["orders-*"], "consume": [...], "write": [...], "admin": false}``); xstreams
verifies the signature (HS256 with a shared secret, or RS256 / ES256 with the application's
public key), ``exp`` (required: a token that never expires is refused), ``nbf`` and, when
configured, ``aud``. The token is never stored; its ``sub`` names the caller in logs.
"""

from __future__ import annotations

from dataclasses import dataclass

import jwt

from app.access.grants import Grant, GrantError

__all__ = ["CLAIM", "JwtVerifier", "VerifiedToken"]

CLAIM = "xstreams"
LEEWAY_S = 5  # clock skew between the application and xstreams


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    subject: str
    grant: Grant
    expires_at_ms: int


class JwtVerifier:
    def __init__(
        self,
        *,
        secret: str | None = None,
        public_key: str | None = None,
        audience: str | None = None,
    ) -> None:
        if secret is not None and public_key is None:
            self._key, self._algorithms = secret, ["HS256"]
        elif public_key is not None and secret is None:
            self._key, self._algorithms = public_key, ["RS256", "ES256"]
        else:
            raise ValueError("a JWT verifier needs exactly one of a secret or a public key")
        self._audience = audience

    @staticmethod
    def looks_like(text: str) -> bool:
        return text.count(".") == 2

    def verify(self, token: str) -> VerifiedToken | None:
        """The token's grant, or None when it is not valid now (bad signature, expired, not
        yet valid, wrong audience, no or malformed grant claim)."""
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
        except (jwt.PyJWTError, GrantError, ValueError):
            return None
        subject = claims.get("sub")
        return VerifiedToken(
            subject if isinstance(subject, str) else "jwt", grant, int(claims["exp"]) * 1000
        )
