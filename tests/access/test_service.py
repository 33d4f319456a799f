"""Access on a running ``xstreams serve``: keys from the command line take effect without a
restart, a revoked key's event streams end, caps per credential, protected mode, TLS, CORS."""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import Server, free_port
from tests.support.access import FAST_KEYS, EventTail, create_key, keys
from tests.support.waiting import until


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    srv = Server(tmp_path, "--token", "admin-secret", env=FAST_KEYS)
    yield srv, tmp_path
    srv.stop()


def test_a_key_created_while_running_works_and_revoking_it_ends_its_streams(
    served: tuple[Server, Path],
) -> None:
    srv, data = served
    text = create_key(data, "tail", "--read", "orders*")
    auth = {"Authorization": f"Bearer {text}"}
    until(lambda: httpx.get(srv.url + "/v1/streams", headers=auth).status_code == 200)
    admin = {"Authorization": "Bearer admin-secret"}
    httpx.post(srv.url + "/", json=["XADD", "orders", "1-1", "f", "v"], headers=admin)
    # The key's own stream, with the key in the query as EventSource sends it.
    tail = EventTail(f"{srv.url}/v1/streams/orders/events?last_id=0&access_token={text}")
    until(lambda: "id: 1-1" in tail.lines)
    assert tail.status == 200
    done = keys(data, "revoke", "tail")
    assert done.returncode == 0, done.stderr
    assert tail.ended.wait(10), "the revoked key's stream is still open"
    r = httpx.get(f"{srv.url}/v1/streams/orders/events?access_token={text}")
    assert r.status_code == 401
    assert httpx.get(srv.url + "/v1/streams", headers=auth).status_code == 401


def test_event_streams_per_credential_are_capped(tmp_path: Path) -> None:
    env = {**FAST_KEYS, "XSTREAMS_SSE_MAX_CONNECTIONS_PER_KEY": "2"}
    srv = Server(tmp_path, "--token", "t", env=env)
    try:
        text = create_key(tmp_path, "greedy", "--read", "*")
        auth = {"Authorization": f"Bearer {text}"}
        until(lambda: httpx.get(srv.url + "/v1/streams", headers=auth).status_code == 200)
        # The admin token is not a scoped credential: only the global cap bounds it.
        admin = httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer t"}, timeout=10)
        held = [admin.stream("GET", "/v1/streams/s/events") for _ in range(3)]
        assert all(s.__enter__().status_code == 200 for s in held)
        streams = []
        client = httpx.Client(base_url=srv.url, headers=auth, timeout=10)
        for _ in range(2):
            s = client.stream("GET", "/v1/streams/s/events")
            r = s.__enter__()
            assert r.status_code == 200
            streams.append(s)
        r = client.get("/v1/streams/s/events")
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert "sse_max_connections_per_key" in r.json()["error"]
        streams.pop().__exit__(None, None, None)
        until(lambda: _opens(client))
        for s in streams + held:
            s.__exit__(None, None, None)
        client.close()
        admin.close()
    finally:
        srv.stop()


def test_event_streams_and_long_polls_share_the_cap_per_credential(tmp_path: Path) -> None:
    env = {**FAST_KEYS, "XSTREAMS_SSE_MAX_CONNECTIONS_PER_KEY": "2"}
    srv = Server(tmp_path, "--token", "t", env=env)
    try:
        text = create_key(tmp_path, "greedy", "--read", "*")
        client = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {text}"})
        until(lambda: client.get("/v1/streams").status_code == 200)
        streams = [client.stream("GET", "/v1/streams/s/events") for _ in range(2)]
        assert all(s.__enter__().status_code == 200 for s in streams)
        # Two streams held: a long poll or a blocking read is the third (each would wait 1 s).
        poll = client.get("/v1/streams/s/entries", params={"after": "$", "block_ms": 1000})
        assert poll.status_code == 429 and poll.headers["retry-after"] == "1"
        assert "sse_max_connections_per_key" in poll.json()["detail"]
        block = client.post("/", json=["XREAD", "BLOCK", "1000", "STREAMS", "s", "$"])
        assert block.status_code == 429 and "sse_max_connections_per_key" in block.json()["error"]
        assert client.get("/v1/streams/s/entries", params={"after": "0"}).status_code == 200
        streams.pop().__exit__(None, None, None)
        until(lambda: client.post("/", json=["XREAD", "BLOCK", "1", "STREAMS", "s", "$"])
              .status_code == 200)  # fmt: skip
        for s in streams:
            s.__exit__(None, None, None)
        client.close()
    finally:
        srv.stop()


def _opens(client: httpx.Client) -> bool:
    with client.stream("GET", "/v1/streams/s/events") as r:
        return r.status_code == 200


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--log-level", "warning", *args],
        env={**os.environ, **(env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )


def test_protected_mode_refuses_a_public_address_without_credentials(tmp_path: Path) -> None:
    port = str(free_port())
    proc = _serve("--host", "0.0.0.0", "--port", port, "--data-dir", str(tmp_path))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "protected mode" in err and "--insecure-no-auth" in err and "--token" in err
    # With credentials, or insisting, it starts.
    for extra in (["--token", "t"], ["--insecure-no-auth"]):
        srv = Server(tmp_path, *extra)  # on 127.0.0.1: loopback is always allowed
        srv.stop()
        proc = _serve("--host", "0.0.0.0", "--port", port, "--data-dir", str(tmp_path), *extra)
        try:
            until(lambda: _healthy(f"http://127.0.0.1:{port}"), 30)
        finally:
            proc.terminate()
            proc.communicate(timeout=30)


def _healthy(url: str, **kw: object) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=1, **kw).status_code == 200  # type: ignore[arg-type]
    except httpx.HTTPError:
        return False


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_tls(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    port = str(free_port())
    proc = _serve(
        "--port", port, "--data-dir", str(tmp_path), "--token", "t",
        "--ssl-certfile", str(cert), "--ssl-keyfile", str(key),
    )  # fmt: skip
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(cert))
    try:
        until(lambda: _healthy(url, verify=trust), 30)
        r = httpx.post(
            url + "/", json=["PING"], headers={"Authorization": "Bearer t"}, verify=trust
        )
        assert r.json() == {"result": "PONG"}
        with pytest.raises(httpx.HTTPError):  # plain HTTP is not served on that port
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_cors(tmp_path: Path) -> None:
    page = "http://127.0.0.1:9999"
    srv = Server(tmp_path, "--token", "t", "--cors-origin", page)
    try:
        pre = httpx.options(
            srv.url + "/v1/streams/s/entries",
            headers={
                "Origin": page,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": (
                    "authorization, content-type, last-event-id, idempotency-key"
                ),
            },
        )
        assert pre.status_code == 200
        assert pre.headers["access-control-allow-origin"] == page
        assert pre.headers["access-control-allow-credentials"] == "true"
        allowed = pre.headers["access-control-allow-headers"].lower()
        wanted = ("authorization", "last-event-id", "upstash-encoding", "idempotency-key")
        assert all(h in allowed for h in wanted)
        r = httpx.post(
            srv.url + "/v1/streams/s/entries",
            json={"fields": {"a": "b"}},
            headers={"Origin": page, "Authorization": "Bearer t"},
        )
        assert r.status_code == 201 and r.headers["access-control-allow-origin"] == page
        exposed = r.headers["access-control-expose-headers"].lower()
        assert "location" in exposed and "idempotent-replayed" in exposed
        # A refusal carries the header too, so the page can read why.
        r = httpx.get(srv.url + "/v1/streams", headers={"Origin": page})
        assert r.status_code == 401 and r.headers["access-control-allow-origin"] == page
        # Another origin gets no CORS grant.
        other = httpx.options(
            srv.url + "/v1/streams",
            headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "GET"},
        )
        assert "access-control-allow-origin" not in other.headers
    finally:
        srv.stop()


def test_no_cors_by_default(tmp_path: Path) -> None:
    srv = Server(tmp_path)
    try:
        r = httpx.get(srv.url + "/healthz", headers={"Origin": "http://127.0.0.1:9999"})
        assert "access-control-allow-origin" not in r.headers
    finally:
        srv.stop()


def test_a_cookie_reads_but_never_writes(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--token", "t")
    try:
        jar = {"xstreams_token": "t"}
        assert httpx.get(srv.url + "/v1/streams", cookies=jar).status_code == 200
        r = httpx.post(srv.url + "/v1/streams/s/entries", json={"fields": {"a": "b"}}, cookies=jar)
        assert r.status_code == 401
        assert httpx.get(srv.url + "/xadd/s/*/a/b", cookies=jar).status_code == 401
        assert httpx.post(srv.url + "/", json=["XLEN", "s"], cookies=jar).status_code == 401
    finally:
        srv.stop()


def test_a_cookie_consumes_a_group_only_from_a_trusted_page(tmp_path: Path) -> None:
    """The group event stream is a GET that runs XREADGROUP: with the cookie alone it is
    refused unless the browser says the page is the service's own or on the CORS list."""
    page = "https://app.example.com"
    srv = Server(tmp_path, "--token", "t", "--cors-origin", page)
    admin = {"Authorization": "Bearer t"}
    http = httpx.Client(base_url=srv.url, timeout=10, cookies={"xstreams_token": "t"})
    try:
        httpx.post(srv.url + "/", json=["XADD", "orders", "1-1", "f", "v"], headers=admin)
        httpx.post(srv.url + "/", json=["XGROUP", "CREATE", "orders", "g", "0"], headers=admin)
        events = "/v1/streams/orders/groups/g/consumers/mallory/events?noack=true"
        for site in ({}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            r = http.get(events, headers=site)
            assert r.status_code == 403, (site, r.text)
            assert r.json()["code"] == "NOPERM" and "cookie" in r.json()["detail"]
            # Reads still pass with the cookie from anywhere (XPENDING reads).
            assert http.get("/v1/streams/orders/groups/g/pending", headers=site).status_code == 200
        group = httpx.post(srv.url + "/", json=["XINFO", "GROUPS", "orders"], headers=admin)
        assert group.json()["result"][0][1::2] == ["g", 0, 0, "0-0", None, 1]  # nothing moved
        for trusted in ({"Sec-Fetch-Site": "same-origin"}, {"Origin": page}):
            with http.stream("GET", events, headers=trusted) as r:
                assert r.status_code == 200, trusted
                lines = r.iter_lines()
                assert next(line for line in lines if line.startswith("id:")) == "id: 1-1"
            httpx.post(srv.url + "/", json=["XGROUP", "SETID", "orders", "g", "0"], headers=admin)
    finally:
        http.close()
        srv.stop()


def test_a_refused_socket_is_not_left_open(tmp_path: Path) -> None:
    """Sanity: protected mode's refusal leaves no listener behind."""
    port = free_port()
    proc = _serve("--host", "0.0.0.0", "--port", str(port), "--data-dir", str(tmp_path))
    proc.communicate(timeout=60)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_a_grant_on_a_glob_with_slashes_reaches_names_written_as_percent_2f(
    served: tuple[Server, Path],
) -> None:
    """The access check sees the name the path decodes to (``v1/stream/orders``), so a grant
    on ``v1/stream/*`` reaches it and not ``v1/other``."""
    srv, data = served
    text = create_key(data, "ds-reader", "--read", "v1/stream/*")
    auth = {"Authorization": f"Bearer {text}"}
    until(lambda: httpx.get(srv.url + "/v1/streams", headers=auth).status_code == 200)
    admin = {"Authorization": "Bearer admin-secret"}
    for key in ("v1/stream/orders", "v1/other"):
        httpx.post(srv.url + "/", json=["XADD", key, "1-1", "f", "v"], headers=admin)
    mine = httpx.get(f"{srv.url}/v1/streams/v1%2Fstream%2Forders/entries", headers=auth)
    assert mine.status_code == 200, mine.text
    assert [e["id"] for e in mine.json()["entries"]] == ["1-1"]
    other = httpx.get(f"{srv.url}/v1/streams/v1%2Fother/entries", headers=auth)
    assert other.status_code == 403, other.text
    write = httpx.post(
        f"{srv.url}/v1/streams/v1%2Fstream%2Forders/entries",
        json={"fields": {"f": "v"}},
        headers=auth,
    )
    assert write.status_code == 403, write.text
