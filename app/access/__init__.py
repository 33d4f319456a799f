"""Who may do what: credentials (admin token, API keys, JWT) to a grant of read / consume /
write / admin on stream globs, and the one check every surface asks (``check``).

    grants      Verb, Grant: the verbs and the globs they hold on
    check       NoPerm, check_command, check_keys, readable, verbs_on: the one decision
    keys        API keys: format, hash, the KeyRing the service refreshes
    tokens      JWT verification (PyJWT)
    principal   Principal, Authenticator: credentials in a request to a grant
"""

from app.access.check import NoPerm, check_command, check_keys, readable, verbs_on
from app.access.grants import ADMIN, Grant, GrantError, Verb
from app.access.keys import KeyRecord, KeyRing, hash_secret, new_key, split_key
from app.access.principal import Authenticator, Kind, Principal
from app.access.tokens import JwtVerifier

__all__ = [
    "ADMIN",
    "Authenticator",
    "Grant",
    "GrantError",
    "JwtVerifier",
    "KeyRecord",
    "KeyRing",
    "Kind",
    "NoPerm",
    "Principal",
    "Verb",
    "check_command",
    "check_keys",
    "hash_secret",
    "new_key",
    "readable",
    "split_key",
    "verbs_on",
]
