"""``--backend`` URLs for Redis: what each names, checked without a server."""

from __future__ import annotations

import pytest

from app.backends.redis import RedisBackend, cluster_address


def test_cluster_addresses_and_credentials() -> None:
    nodes, auth = cluster_address("redis+cluster://u%40x:p%3Aw@10.0.0.1:7000,10.0.0.2,[::1]:7002")
    assert nodes == [("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7002)]
    assert auth == {"username": "u@x", "password": "p:w"}
    assert cluster_address("rediss+cluster://h:1")[1] == {}


@pytest.mark.parametrize(
    "url", ["redis+cluster://", "redis+cluster://h:port", "memcached://h:1", "http://h"]
)
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        RedisBackend.from_url(url)


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("redis://127.0.0.1:6379/3", "redis"),
        ("rediss://user:pw@127.0.0.1:6380/0", "redis"),
        ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "redis-cluster"),
        ("rediss+cluster://127.0.0.1:7000", "redis-cluster"),
    ],
)
async def test_urls_make_the_right_client_without_connecting(url: str, name: str) -> None:
    backend = RedisBackend.from_url(url, block_connections=2)
    assert backend.name == name and backend.stateless
    await backend.close()
