"""Where webhooks may send: an allow-list of host globs, https only, public addresses only.

The checks, in order, for every request (not once per webhook: a name may resolve elsewhere
tomorrow):

1. the scheme: ``https``, or also ``http`` with ``webhook_allow_http``;
2. the host name (lower case, IDNA) against the ``webhook_allow_hosts`` globs (Redis glob
   syntax, ``*.example.com``); none set means no destination is allowed;
3. the addresses it resolves to (an IP literal is its own): every one must be a public
   unicast address. Loopback, private (RFC 1918, fc00::/7), link-local, carrier-grade NAT,
   reserved, documentation, unspecified and multicast addresses are refused unless
   ``webhook_allow_private``, which allows the unicast ones among them; the cloud metadata
   addresses (169.254.169.254, fd00:ec2::254) and multicast / unspecified addresses are
   refused even then. A name with one refused address among several is refused whole (a
   rebinding answer mixes them).

No time-of-check to time-of-use gap: the runner's client (``app.delivery.http1.Lane``)
resolves the name itself, checks the addresses, and connects to the address it checked (the
``Host`` header and the TLS server name, which the certificate is verified against, stay the
host name). Redirects are never followed: a 3xx is an answer like any other non-2xx. No
proxy is used, so nothing routes around the checks.

A refusal raises ``Refused`` (text says which rule); the runner counts it as a failed
delivery (outcome ``refused``), never a crash.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import httpx

from app.engine.glob import glob_match

__all__ = [
    "METADATA_ADDRESSES",
    "OutboundRules",
    "Refused",
    "Resolver",
    "check_destination",
    "checked_address",
    "is_literal",
]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
DNS_CACHE_S = 5.0  # a checked answer is reused this long (the connection goes to it)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]


class Refused(Exception):
    """A destination the outbound rules refuse; the text says which rule."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses of ``host`` (getaddrinfo, off the loop), in the system's order."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class OutboundRules:
    """The settings' ``webhook_allow_hosts``, ``webhook_allow_http``, ``webhook_allow_private``."""

    allow_hosts: Sequence[str] = ()
    allow_http: bool = False
    allow_private: bool = False

    def check_url(self, url: str | httpx.URL) -> tuple[str, int]:
        """The static part (scheme, host glob): the host and port to resolve, or ``Refused``.
        A REST resource may call it to refuse a webhook's URL when it is set."""
        try:
            u = httpx.URL(url) if isinstance(url, str) else url
        except httpx.InvalidURL as e:
            raise Refused(f"not a valid URL: {e}") from None
        scheme = u.scheme
        if scheme != "https" and not (scheme == "http" and self.allow_http):
            raise Refused(
                f"{scheme}:// is refused: webhooks go over https"
                + ("" if scheme != "http" else " (unless --webhook-allow-http)")
            )
        host = u.host.lower().rstrip(".")
        if not host:
            raise Refused("the URL has no host")
        if not any(glob_match(g.lower(), host) for g in self.allow_hosts):
            raise Refused(f"host {host!r} matches no --webhook-allow-host glob")
        port = u.port or (443 if scheme == "https" else 80)
        return host, port

    def check_address(self, ip: IPAddress) -> None:
        """``Refused`` unless ``ip`` may be connected to."""
        mapped = getattr(ip, "ipv4_mapped", None)
        if mapped is not None:  # ::ffff:127.0.0.1 is 127.0.0.1
            ip = mapped
        if ip in METADATA_ADDRESSES:
            raise Refused(f"{ip} is a cloud metadata address")
        if ip.is_unspecified or ip.is_multicast:
            kind = "unspecified" if ip.is_unspecified else "multicast"
            raise Refused(f"{ip} is a {kind} address")
        if ip.is_global or self.allow_private:
            return
        kind = (
            "loopback"
            if ip.is_loopback
            else "link-local"
            if ip.is_link_local
            else "private"
            if ip.is_private
            else "non-public"
        )
        raise Refused(f"{ip} is a {kind} address (unless --webhook-allow-private)")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_literal(host: str) -> bool:
    """Whether ``host`` is an IP address (its own answer: nothing to resolve or cache)."""
    return _literal(host) is not None


async def checked_address(
    rules: OutboundRules, host: str, port: int, resolver: Resolver = system_resolver
) -> str:
    """The address to connect to for ``host`` once every address it resolves to passed
    ``check_address`` (an IP literal is its own), or ``Refused``."""
    literal = _literal(host)
    if literal is not None:
        rules.check_address(literal)
        return str(literal)
    try:
        found = await resolver(host, port)
    except OSError as e:
        raise Refused(f"cannot resolve {host!r}: {e}") from None
    if not found:
        raise Refused(f"{host!r} resolves to no address")
    for text in found:
        rules.check_address(ipaddress.ip_address(text.split("%", 1)[0]))
    return found[0]


async def check_destination(
    rules: OutboundRules, url: str, resolver: Resolver = system_resolver
) -> None:
    """The whole check a request to ``url`` would pass now (scheme, host glob, DNS and
    addresses), or ``Refused``: what a PUT of a webhook asks before it is stored."""
    host, port = rules.check_url(url)
    await checked_address(rules, host, port, resolver)
