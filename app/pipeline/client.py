"""A small, synchronous client of the Redis-command endpoint, for the driver and executors.

The pipeline speaks the Upstash REST protocol (``POST /`` and ``POST /pipeline`` with JSON
arrays) rather than the REST resources: it is the fastest read path the service has, it keeps
Redis's exact range semantics (exclusive ``(id`` bounds for paging, ``MINID`` trimming), and the
same source then reads any server of that protocol. Transient failures (connection errors, 5xx,
429) are retried with capped exponential backoff and jitter; a Redis error reply is not
transient and is raised at once.

Bytes that are not UTF-8 travel as ``\\udcNN`` escapes in the service's JSON, both ways: a reply
holding them decodes to strings with the lone surrogates U+DCNN (the journal's codec,
``decode_json``), and such a string sent back in a command is those bytes again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from app.engine.json_codec import decode_json, encode_json

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class SourceError(RuntimeError):
    """The service refused a request or could not be reached; the text says which and why."""


class MissingStream(SourceError):
    """A stream named on its own (not by a glob) does not exist."""


class ReplyError(SourceError):
    """A Redis error reply (``{"error": ...}``), e.g. WRONGTYPE or NOGROUP."""


class Client:
    """One HTTP connection pool to one service; cheap to create per Spark task."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        retries: int = 5,
        backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # Certificates matter only for https; loading them costs ~30 ms per client, and every
        # Spark task makes one.
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=timeout_s,
            transport=transport,
            verify=self.url.startswith("https://"),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, *args: str | int) -> Any:
        """Run one command and return its result; a Redis error raises ``ReplyError``."""
        body = self._post("/", [str(a) for a in args])
        return _result(body, args)

    def pipeline(
        self, commands: Sequence[Sequence[str | int]], *, errors: bool = True
    ) -> list[Any]:
        """Run several commands in one request; the first error among them raises, or with
        ``errors=False`` each error takes its command's place as a ``ReplyError``."""
        if not commands:
            return []
        body = self._post("/pipeline", [[str(a) for a in c] for c in commands])
        if not isinstance(body, list) or len(body) != len(commands):
            raise SourceError(f"{self.url}/pipeline answered an unexpected body")
        results: list[Any] = []
        for item, cmd in zip(body, commands, strict=True):
            try:
                results.append(_result(item, cmd))
            except ReplyError as exc:
                if errors:
                    raise
                results.append(exc)
        return results

    def _post(self, path: str, payload: Any) -> Any:
        content = encode_json(payload)
        attempt = 0
        while True:
            try:
                response = self._http.post(path, content=content)
            except httpx.TransportError as exc:
                problem = f"cannot reach {self.url}: {exc}"
            else:
                status = response.status_code
                if status == 401:
                    raise SourceError(
                        f"{self.url} refused the request (401): set the token option "
                        "to the service's token"
                    )
                if status not in RETRY_STATUSES:
                    try:
                        return decode_json(response.content)
                    except ValueError:
                        raise SourceError(
                            f"{self.url}{path} answered {status} with a body that is not "
                            "JSON: is this an xstreams (Upstash REST protocol) endpoint?"
                        ) from None
                problem = f"{self.url}{path} answered {status}: {response.text[:200]}"
            if attempt >= self.retries:
                raise SourceError(f"{problem} (gave up after {attempt + 1} attempts)")
            delay = min(self.max_backoff_s, self.backoff_s * 2**attempt)
            time.sleep(delay * (0.5 + random.random() / 2))
            attempt += 1

    def scan(self, pattern: str, type_: str = "stream") -> list[str]:
        """Every key matching a glob, sorted (SCAN ... MATCH ... TYPE)."""
        keys: set[str] = set()
        cursor = "0"
        while True:
            cursor, page = self("SCAN", cursor, "MATCH", pattern, "COUNT", 1000, "TYPE", type_)
            keys.update(page)
            if cursor == "0":
                return sorted(keys)

    def xrange_pages(
        self, stream: str, start: str, end: str, page_size: int
    ) -> Iterator[list[list[Any]]]:
        """XRANGE from start to end in pages, each page resuming after the last ID seen."""
        lower = start
        while True:
            page = self("XRANGE", stream, lower, end, "COUNT", page_size)
            if page:
                yield page
            if len(page) < page_size:
                return
            lower = "(" + page[-1][0]


def _result(body: Any, command: Sequence[str | int]) -> Any:
    if isinstance(body, dict):
        if "error" in body:
            raise ReplyError(f"{' '.join(str(a) for a in command[:2])}: {body['error']}")
        if "result" in body:
            return body["result"]
    raise SourceError(f"unexpected reply to {command[0]}: {str(body)[:200]}")
