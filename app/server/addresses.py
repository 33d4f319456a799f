"""The addresses ``xstreams serve`` logs once it listens: where each surface answers.

A host that means "every address" (``0.0.0.0``, ``::``) is no address to type in a browser,
so the lines name the loopback one and say what to use from another machine.
"""

from __future__ import annotations

import logging

__all__ = ["announce", "surface_lines"]

log = logging.getLogger("xstreams")

EVERY_ADDRESS = {"0.0.0.0": ("IPv4", "127.0.0.1"), "::": ("IPv6", "[::1]"), "": ("", "127.0.0.1")}

SURFACES = (
    ("API", "/v1"),
    ("API docs", "/docs"),
    ("dashboard", "/ui/"),
    ("command endpoint", "/"),
)


def surface_lines(host: str, port: int, tls: bool) -> list[str]:
    """The lines to log: one per surface, and for an every-address host which to use."""
    scheme = "https" if tls else "http"
    every = EVERY_ADDRESS.get(host)
    shown = every[1] if every else f"[{host}]" if ":" in host else host
    base = f"{scheme}://{shown}:{port}"
    width = max(len(name) for name, _ in SURFACES)
    lines = [f"{name + ':':<{width + 1}} {base}{path}" for name, path in SURFACES]
    if every:
        family = f" {every[0]}" if every[0] else ""
        lines.append(
            f"listening on every{family} address ({host or 'any'}): from another machine,"
            f" use this machine's name or address in place of {shown}"
        )
    return lines


def announce(host: str, port: int, tls: bool) -> None:
    """Log ``surface_lines`` at info, one record each (one JSON object each in JSON logs)."""
    for line in surface_lines(host, port, tls):
        log.info("%s", line)
