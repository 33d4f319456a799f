"""Credentials to principals: the admin token, API keys and JWTs, from every place they travel."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from app.access import (
    ADMIN,
    Authenticator,
    Grant,
    JwtVerifier,
    KeyRecord,
    KeyRing,
    Kind,
    NoPerm,
    check_command,
    hash_secret,
    new_key,
    split_key,
)
from app.engine.commands import lookup

NOW_MS = 1_800_000_000_000
SECRET = "an application secret of enough length"


def key_record(name: str = "reader", **kw: Any) -> tuple[KeyRecord, str]:
    key_id, secret, text = new_key()
    record = KeyRecord(
        key_id=key_id,
        name=name,
        secret_hash=hash_secret(secret),
        grant=kw.pop("grant", Grant.of(read=["orders*"])),
        created_at_ms=NOW_MS - 1000,
        **kw,
    )
    return record, text


def bearer(text: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", b"Bearer " + text.encode())]


def mint(claims: dict[str, Any], key: Any = SECRET, alg: str = "HS256") -> str:
    base = {"sub": "alice", "exp": int(time.time()) + 60, "xstreams": {"read": ["orders"]}}
    return jwt.encode({**base, **claims}, key, algorithm=alg)


def test_nothing_configured_is_open() -> None:
    p = Authenticator().authenticate([], b"", NOW_MS)
    assert p is not None and p.kind is Kind.OPEN and p.grant.admin


def test_the_admin_token_from_a_header_or_the_query() -> None:
    auth = Authenticator(token="s3cret")
    for headers, query in [
        (bearer("s3cret"), b""),
        ([], b"_token=s3cret"),
        ([], b"a=1&_token=s3cret"),
    ]:
        p = auth.authenticate(headers, query, NOW_MS)
        assert p is not None and p.kind is Kind.TOKEN and p.grant.admin
    for headers, query in [
        ([], b""),
        (bearer("wrong"), b""),
        ([], b"_token=%E2%82%AC"),
        ([], b"_token=%FF"),
    ]:
        assert auth.authenticate(headers, query, NOW_MS) is None


def test_api_keys_by_id_and_secret() -> None:
    record, text = key_record()
    auth = Authenticator(keys=KeyRing([record]))
    p = auth.authenticate(bearer(text), b"", NOW_MS)
    assert p is not None and p.kind is Kind.KEY and p.key_id == record.key_id
    assert p.grant == Grant.of(read=["orders*"]) and p.name == "reader"
    key_id, secret = split_key(text)  # type: ignore[misc]
    tampered = f"xs_{key_id}_{secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}"
    assert auth.authenticate(bearer(tampered), b"", NOW_MS) is None
    assert auth.authenticate(bearer("xs_000000000000_" + secret), b"", NOW_MS) is None


def test_revoked_and_expired_keys_are_refused() -> None:
    revoked, t1 = key_record("a", revoked_at_ms=NOW_MS - 1)
    expired, t2 = key_record("b", expires_at_ms=NOW_MS)
    auth = Authenticator(keys=KeyRing([revoked, expired]))
    assert auth.authenticate(bearer(t1), b"", NOW_MS) is None
    assert auth.authenticate(bearer(t2), b"", NOW_MS) is None
    assert auth.enabled  # keys exist: no longer open


def test_the_ring_reports_keys_that_went_away() -> None:
    a, _ = key_record("a")
    b, _ = key_record("b")
    gone: list[set[str]] = []
    ring = KeyRing([a, b])
    ring.on_gone(gone.append)
    ring.replace([a, KeyRecord(**{**_fields(b), "revoked_at_ms": NOW_MS})], NOW_MS)
    ring.replace([], NOW_MS)
    assert gone == [{b.key_id}, {a.key_id}]


def _fields(r: KeyRecord) -> dict[str, Any]:
    return {f: getattr(r, f) for f in r.__dataclass_fields__}


def test_jwt_hs256_from_header_query_and_cookie() -> None:
    auth = Authenticator(jwt=JwtVerifier(secret=SECRET), cookie="xs")
    token = mint({})
    cookie = [(b"cookie", b"other=1; xs=" + token.encode())]
    for headers, query in [
        (bearer(token), b""),
        ([], b"access_token=" + token.encode()),
        (cookie, b""),
    ]:
        p = auth.authenticate(headers, query, NOW_MS, cookie_ok=True)
        assert p is not None and p.kind is Kind.JWT and p.name == "alice"
        assert p.grant == Grant.of(read=["orders"])
    # Where a cookie may not authorize (a write, the command endpoint), it is not read.
    assert auth.authenticate(cookie, b"", NOW_MS) is None


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": -60},  # expired (times: seconds from now, when the test runs)
        {"nbf": 60},  # not yet valid
        {"xstreams": None},  # no grant
        {"xstreams": {"read": "x", "fly": ["y"]}},  # malformed grant
        {"aud": "someone-else"},
    ],
)
def test_jwt_refused(claims: dict[str, Any]) -> None:
    now = int(time.time())
    claims = {k: now + v if k in ("exp", "nbf") else v for k, v in claims.items()}
    auth = Authenticator(jwt=JwtVerifier(secret=SECRET, audience="xstreams"))
    assert auth.authenticate(bearer(mint({"aud": "xstreams", **claims})), b"", NOW_MS) is None


def test_jwt_without_exp_or_with_another_key_is_refused() -> None:
    auth = Authenticator(jwt=JwtVerifier(secret=SECRET))
    no_exp = jwt.encode({"xstreams": {"read": ["a"]}}, SECRET, algorithm="HS256")
    assert auth.authenticate(bearer(no_exp), b"", NOW_MS) is None
    assert auth.authenticate(bearer(mint({}, key="x" * 40)), b"", NOW_MS) is None
    # An HS256 token signed with a public key's text is the classic algorithm confusion.
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    rs = Authenticator(jwt=JwtVerifier(public_key=pem.decode()))
    assert rs.authenticate(bearer(mint({}, key="x" * 64, alg="HS256")), b"", NOW_MS) is None


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_jwt_with_a_public_key(alg: str) -> None:
    private: Any = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if alg == "RS256"
        else ec.generate_private_key(ec.SECP256R1())
    )
    pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    auth = Authenticator(jwt=JwtVerifier(public_key=pem.decode()))
    p = auth.authenticate(bearer(mint({}, key=private, alg=alg)), b"", NOW_MS)
    assert p is not None and p.kind is Kind.JWT


# The consumer-group event stream's command: a GET that writes (the group's cursor, consumers).
CONSUME = ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders", ">"]
READS = [["XRANGE", "orders", "-", "+"], ["XPENDING", "orders", "g"], ["XLEN", "orders"]]
TRUSTED = "https://app.example.com"


@pytest.mark.parametrize(
    ("extra", "trusted"),
    [
        ([], False),  # a browser too old to say, or a script: it sends a credential instead
        ([(b"sec-fetch-site", b"cross-site")], False),  # a link or redirect from another site
        ([(b"sec-fetch-site", b"same-site")], False),  # a sibling host is another origin
        ([(b"sec-fetch-site", b"none")], False),  # typed in the address bar, a bookmark
        ([(b"origin", b"https://evil.example")], False),
        ([(b"origin", b"null")], False),
        ([(b"origin", b"*")], False),  # "*" on the CORS list vouches for nobody
        ([(b"sec-fetch-site", b"same-origin")], True),  # a page of the service's own
        ([(b"origin", TRUSTED.encode())], True),  # a page on the CORS list
        ([(b"sec-fetch-site", b"cross-site"), (b"origin", TRUSTED.encode())], True),
    ],
)
def test_a_cookie_writes_only_for_a_trusted_page(
    extra: list[tuple[bytes, bytes]], trusted: bool
) -> None:
    grant = Grant.of(read=["orders"], consume=["orders"], write=["orders"])
    record, text = key_record(grant=grant)
    ring = KeyRing([record])
    admin_writes = [["FLUSHALL"], ["XGROUP", "DESTROY", "orders", "g"]]
    for credential, granted, writes in [(text, grant, []), ("admin-token", ADMIN, admin_writes)]:
        auth = Authenticator(
            token="admin-token", keys=ring, cookie="xs", trusted_origins=[TRUSTED, "*"]
        )
        headers = [(b"cookie", b"xs=" + credential.encode()), *extra]
        p = auth.authenticate(headers, b"", NOW_MS, cookie_ok=True)
        assert p is not None and p.grant == granted
        for argv in READS:  # reads pass, whatever page asked
            check_command(p, lookup(argv), argv)
        for argv in [CONSUME, ["XADD", "orders", "*", "f", "v"], *writes]:
            if trusted:
                check_command(p, lookup(argv), argv)
            else:
                with pytest.raises(NoPerm) as e:
                    check_command(p, lookup(argv), argv)
                assert e.value.text.startswith("NOPERM a cookie cannot authorize")
                assert f"'{lookup(argv).name}'" in e.value.text


def test_a_credential_sent_on_purpose_wins_over_the_cookie() -> None:
    """A header or query credential is not the browser's doing: it writes from any page, and
    is tried before the cookie, so a cookie sent along does not hold it back."""
    writer = Grant.of(consume=["orders"])
    record, text = key_record(grant=writer)
    auth = Authenticator(token="admin-token", keys=KeyRing([record]), cookie="xs")
    cross = [(b"cookie", b"xs=admin-token"), (b"sec-fetch-site", b"cross-site")]
    for headers, query in [(cross + bearer(text), b""), (cross, b"access_token=" + text.encode())]:
        p = auth.authenticate(headers, query, NOW_MS, cookie_ok=True)
        assert p is not None and p.key_id == record.key_id and p.writes
        check_command(p, lookup(CONSUME), CONSUME)


def _signed(payload: bytes) -> str:
    """An HS256 token over exactly these payload bytes (PyJWT would re-encode the JSON)."""
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(payload).rstrip(b"=")
    mac = hmac.new(SECRET.encode(), head + b"." + body, hashlib.sha256).digest()
    return b".".join([head, body, base64.urlsafe_b64encode(mac).rstrip(b"=")]).decode()


@pytest.mark.parametrize(
    "exp",
    [
        '"{soon}"',  # a string of digits
        "{soon}.5",  # a float
        "1e300",  # a float far beyond any lifetime
        "true",
        "{days}",  # an integer, two days ahead: past the default day
        str(2**64),
    ],
)
def test_jwt_exp_is_an_integer_within_the_maximum_lifetime(exp: str) -> None:
    now_s = int(time.time())
    grant = b'"xstreams": {"read": ["orders"]}'
    text = exp.format(soon=now_s + 60, days=now_s + 2 * 86_400).encode()
    auth = Authenticator(jwt=JwtVerifier(secret=SECRET))
    assert auth.authenticate(bearer(_signed(b'{"exp": ' + text + b", " + grant + b"}")),
                             b"", now_s * 1000) is None  # fmt: skip
    # The same claims with an integer an hour ahead pass.
    fine = f'{{"exp": {now_s + 3600}, '.encode() + grant + b"}"
    p = auth.authenticate(bearer(_signed(fine)), b"", now_s * 1000)
    assert p is not None and p.expires_at_ms == (now_s + 3600) * 1000


def test_jwt_maximum_lifetime_is_configured() -> None:
    now_s = int(time.time())
    week = mint({"exp": now_s + 7 * 86_400})
    longer = Authenticator(jwt=JwtVerifier(secret=SECRET, max_lifetime_ms=8 * 86_400_000))
    assert longer.authenticate(bearer(week), b"", now_s * 1000) is not None
    short = Authenticator(jwt=JwtVerifier(secret=SECRET, max_lifetime_ms=60_000))
    assert short.authenticate(bearer(mint({"exp": now_s + 3600})), b"", now_s * 1000) is None
    assert short.authenticate(bearer(mint({"exp": now_s + 30})), b"", now_s * 1000) is not None


def test_identity_of_each_credential() -> None:
    """What Idempotency-Keys are scoped by: an API key's id, a JWT's issuer and ``sub``, a
    JWT without ``sub`` the token itself; never what the credential may do."""
    record, text = key_record()
    auth = Authenticator(token="t", keys=KeyRing([record]), jwt=JwtVerifier(secret=SECRET))

    def identity(credential: str) -> str:
        p = auth.authenticate(bearer(credential), b"", NOW_MS)
        assert p is not None
        return p.identity

    assert identity(text) == record.key_id
    assert identity("t") == "token:admin"
    other_grant = {"xstreams": {"write": ["elsewhere"]}}
    assert identity(mint({})) == identity(mint(other_grant))  # one sub, other grants
    assert identity(mint({"iss": "a"})) != identity(mint({"iss": "b"}))
    unnamed, also_unnamed = unnamed_token({}), unnamed_token(other_grant)
    assert identity(unnamed) == identity(unnamed)
    assert identity(unnamed) != identity(also_unnamed)
    assert identity(unnamed) not in (identity(mint({})), "jwt:jwt")


def unnamed_token(claims: dict[str, Any]) -> str:
    """A JWT without ``sub``."""
    base = {"exp": int(time.time()) + 60, "xstreams": {"read": ["orders"]}}
    return jwt.encode({**base, **claims}, SECRET, algorithm="HS256")
