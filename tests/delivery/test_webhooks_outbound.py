"""Where webhooks may send (app/delivery/outbound.py): the scheme, the host globs, and the
addresses a name resolves to, checked through the runner's client (``Lane``,
app/delivery/http1.py) before any connection. The connection going to the checked address
with the Host header and the TLS server name kept, and redirects not followed, are held in
tests/delivery/test_http1.py."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.delivery.http1 import lanes_for
from app.delivery.outbound import OutboundRules, Refused, Resolver
from app.settings import Settings
from tests.delivery.support import receiving

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


def resolving(answers: dict[str, list[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    return resolve


async def test_a_name_is_checked_after_resolution() -> None:
    with receiving() as r:
        port = r.url.split(":")[2].split("/")[0]
        # localhost, by the system's resolver: loopback, refused before any connection.
        (lane,) = lanes_for(OPEN, f"http://localhost:{port}/hook", 1)
        with pytest.raises(Refused, match="loopback"):
            await lane.post(b"{}", {})
        # A rebinding answer (one public address, one private) is refused whole.
        rebind = resolving({"hooks.test": ["93.184.215.14", "127.0.0.1"]})
        (lane,) = lanes_for(OPEN, f"http://hooks.test:{port}/hook", 1, rebind)
        with pytest.raises(Refused, match=r"127\.0\.0\.1"):
            await lane.post(b"{}", {})
        for metadata in ("169.254.169.254", "[fd00:ec2::254]"):
            (lane,) = lanes_for(PRIVATE_OK, f"http://{metadata}/latest/meta-data/", 1)
            with pytest.raises(Refused, match="metadata"):
                await lane.post(b"{}", {})
    assert r.hits == []


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


def test_the_settings_and_their_defaults() -> None:
    s = Settings()
    assert (s.webhook_allow_hosts, s.webhook_allow_http, s.webhook_allow_private) == (
        [],
        False,
        False,
    )
    s = Settings(webhook_allow_hosts="hooks.example.com, *.example.net")  # type: ignore[arg-type]
    assert s.webhook_allow_hosts == ["hooks.example.com", "*.example.net"]
