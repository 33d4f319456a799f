"""Where webhooks may send (app/delivery/outbound.py): the scheme, the host globs, and the
addresses a name resolves to, checked on the address the connection then goes to, with the
Host header and the TLS server name kept; redirects never followed."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.delivery.outbound import (
    GuardedTransport,
    OutboundRules,
    Refused,
    Resolver,
    system_resolver,
    transports_for,
)
from app.settings import Settings
from tests.delivery.support import Answer, receiving

OPEN = OutboundRules(("*",), allow_http=True)
PRIVATE_OK = OutboundRules(("*",), allow_http=True, allow_private=True)


@pytest.mark.parametrize(
    ("url", "rules", "refusal"),
    [
        ("https://hooks.example.com/x", OutboundRules(("hooks.example.com",)), None),
        ("https://HOOKS.example.com./x", OutboundRules(("hooks.example.com",)), None),
        ("https://a.example.com/x", OutboundRules(("*.example.com",)), None),
        ("https://example.org/x", OutboundRules(("*.example.com",)), "matches no"),
        ("https://hooks.example.com/x", OutboundRules(()), "matches no"),
        ("http://hooks.example.com/x", OutboundRules(("*",)), "https"),
        ("http://hooks.example.com/x", OutboundRules(("*",), allow_http=True), None),
        ("ftp://hooks.example.com/x", OutboundRules(("*",), allow_http=True), "refused"),
    ],
)
def test_the_scheme_and_the_host_globs(url: str, rules: OutboundRules, refusal: str | None) -> None:
    if refusal is None:
        rules.check_url(url)
    else:
        with pytest.raises(Refused, match=refusal):
            rules.check_url(url)


@pytest.mark.parametrize(
    ("address", "without", "with_private"),
    [
        ("93.184.215.14", None, None),
        ("2606:4700::1111", None, None),
        ("127.0.0.1", "loopback", None),
        ("::1", "loopback", None),
        ("::ffff:127.0.0.1", "loopback", None),
        ("10.1.2.3", "private", None),
        ("192.168.1.1", "private", None),
        ("fd12::1", "private", None),
        ("169.254.1.1", "link-local", None),
        ("100.64.0.1", "non-public", None),
        ("169.254.169.254", "metadata", "metadata"),
        ("fd00:ec2::254", "metadata", "metadata"),
        ("0.0.0.0", "unspecified", "unspecified"),
        ("::", "unspecified", "unspecified"),
        ("224.0.0.1", "multicast", "multicast"),
        ("ff02::1", "multicast", "multicast"),
    ],
)
def test_addresses(address: str, without: str | None, with_private: str | None) -> None:
    ip = ipaddress.ip_address(address)
    for rules, refusal in ((OPEN, without), (PRIVATE_OK, with_private)):
        if refusal is None:
            rules.check_address(ip)
        else:
            with pytest.raises(Refused, match=refusal):
                rules.check_address(ip)


def client_for(
    rules: OutboundRules,
    lanes: int,
    resolver: Resolver = system_resolver,
    verify: bool | ssl.SSLContext = True,
) -> httpx.AsyncClient:
    """A client over one of the runner's transports (the runner calls it directly)."""
    (transport,) = transports_for(rules, lanes, resolver, verify)
    return httpx.AsyncClient(transport=transport, trust_env=False)


def resolving(answers: dict[str, list[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    return resolve


async def test_a_name_is_checked_after_resolution() -> None:
    with receiving() as r:
        port = r.url.split(":")[2].split("/")[0]
        # localhost, by the system's resolver: loopback, refused before any connection.
        async with client_for(OPEN, 1) as client:
            with pytest.raises(Refused, match="loopback"):
                await client.post(f"http://localhost:{port}/hook")
        # A rebinding answer (one public address, one private) is refused whole.
        rebind = resolving({"hooks.test": ["93.184.215.14", "127.0.0.1"]})
        async with client_for(OPEN, 1, rebind) as client:
            with pytest.raises(Refused, match=r"127\.0\.0\.1"):
                await client.post(f"http://hooks.test:{port}/hook")
        for metadata in ("169.254.169.254", "[fd00:ec2::254]"):
            async with client_for(PRIVATE_OK, 1) as client:
                with pytest.raises(Refused, match="metadata"):
                    await client.post(f"http://{metadata}/latest/meta-data/")
    assert r.hits == []


async def test_the_connection_goes_to_the_checked_address_with_the_host_name_kept() -> None:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    with receiving() as r:
        port = r.url.split(":")[2].split("/")[0]
        async with client_for(PRIVATE_OK, 1, resolve) as client:
            for _ in range(2):
                response = await client.post(f"http://hooks.test:{port}/hook", content=b"{}")
                assert response.status_code == 200
    assert [h.headers["host"] for h in r.hits] == [f"hooks.test:{port}"] * 2
    assert calls == ["hooks.test"]  # the checked answer is reused for a while, not re-asked


def _certificate(tmp: Path, name: str) -> tuple[str, str, ssl.SSLContext]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(cafile=str(cert_file))
    return str(cert_file), str(key_file), context


async def test_tls_is_verified_against_the_host_name_not_the_address(tmp_path: Path) -> None:
    cert, key, trust = _certificate(tmp_path, "hooks.test")
    rules = OutboundRules(("hooks.test", "other.test"), allow_private=True)
    to_loopback = resolving({"hooks.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    with receiving(tls=(cert, key)) as r:
        port = r.url.split(":")[2].split("/")[0]
        async with client_for(rules, 1, to_loopback, trust) as client:
            response = await client.post(f"https://hooks.test:{port}/hook", content=b"{}")
            assert response.status_code == 200
        async with client_for(rules, 1, to_loopback, trust) as client:
            with pytest.raises(httpx.ConnectError, match=r"(?i)certificate|hostname"):
                await client.post(f"https://other.test:{port}/hook", content=b"{}")
    assert [h.headers["host"] for h in r.hits] == [f"hooks.test:{port}"]


async def test_redirects_are_answers_not_followed_by_the_transport() -> None:
    with receiving() as elsewhere:
        moved = receiving(lambda n, hit: Answer(302, (("location", elsewhere.url),)))
        with moved as r:
            (transport,) = transports_for(PRIVATE_OK, 1)
            request = httpx.Request("POST", r.url, content=b"{}")
            response = await transport.handle_async_request(request)
            await response.aread()
            await transport.aclose()
    assert response.status_code == 302
    assert elsewhere.hits == []


def test_the_settings_and_their_defaults() -> None:
    s = Settings()
    assert (s.webhook_allow_hosts, s.webhook_allow_http, s.webhook_allow_private) == (
        [],
        False,
        False,
    )
    s = Settings(webhook_allow_hosts="hooks.example.com, *.example.net")  # type: ignore[arg-type]
    assert s.webhook_allow_hosts == ["hooks.example.com", "*.example.net"]


def test_guarded_transport_is_an_httpx_transport() -> None:
    assert isinstance(GuardedTransport(OPEN), httpx.AsyncBaseTransport)
