"""HTTP and Server-Sent Events access to a service, with its failures as two exceptions.

Every command goes through ``Service``: it turns a refused connection into ``Unreachable``
(exit code 3) and a problem+json answer into ``ServiceError`` (exit code 1), so the commands
only say what they ask for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import ServerSentEvent, connect_sse

DEFAULT_URL = "http://127.0.0.1:8000"


class ServiceError(Exception):
    """The service answered with an error; ``detail`` is its problem+json detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class Unreachable(Exception):
    """No answer from the service at all (refused, unresolvable, timed out)."""


def segment(name: str) -> str:
    """A stream, group or consumer name as one path segment (a ``/`` in a name stays in it)."""
    return quote(name, safe="")


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("error") or body.get("title") or body)
    return str(body)


class Service:
    """One service's HTTP API: JSON requests and event streams under ``/v1``."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.client.close()

    def call(
        self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None
    ) -> Any:
        """The decoded JSON answer of one request; raises ServiceError or Unreachable."""
        params = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self.client.request(method, path, params=params, json=body)
        except httpx.TransportError as exc:
            raise Unreachable(f"cannot reach {self.url}: {exc or type(exc).__name__}") from exc
        if response.status_code >= 400:
            raise ServiceError(response.status_code, _detail(response))
        return response.json() if response.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params)

    def post(self, path: str, body: Any, **params: Any) -> Any:
        return self.call("POST", path, params, body)

    @contextmanager
    def events(
        self, path: str, params: dict[str, Any], last_event_id: str | None = None
    ) -> Iterator[Iterator[ServerSentEvent]]:
        """One connection to an event stream; its events until the connection ends.

        Errors reaching it raise as ``call`` does; a connection dropped midway raises
        ``httpx.TransportError`` from the iterator, for the caller to resume."""
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        timeout = httpx.Timeout(10.0, read=None)  # an idle stream is quiet, not dead
        try:
            with connect_sse(
                self.client, "GET", path, params=params, headers=headers, timeout=timeout
            ) as source:
                response = source.response
                if response.status_code >= 400:
                    response.read()
                    raise ServiceError(response.status_code, _detail(response))
                yield source.iter_sse()
        except httpx.ConnectError as exc:
            raise Unreachable(f"cannot reach {self.url}: {exc or type(exc).__name__}") from exc
