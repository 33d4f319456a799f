"""What a route answers, once its access check passed, for a key that already has an answer.

When a request's Idempotency-Key already has an answer (the response kept for the first
attempt, or 422 / 409: app/api/idempotency), the middleware does not send it: it runs the app
with the answer in the scope. The route checks the caller who sends this request, as it
checks a first attempt, with the same code (``app.access.check`` per command of the body on
the command endpoint, per route on REST); only then does it send the answer instead of
running anything. A caller the check refuses gets the route's own refusal, as it would
without the key. So a retry never shows a caller what it may not see now, whoever kept it:
another token of the same subject with other grants, a key narrowed since.

A pipeline answers each command on its own: a kept pipeline response is sent with the
commands the check refuses now answered by their refusal (``items_answer``). SCAN's reply is
narrowed to what its caller may read, so a kept one may list what this caller may not: a
retry runs SCAN again for its caller (it writes nothing), alone or as its item of a kept
pipeline or transaction.

Handlers that decide further access from what they read (a redrive checks the streams its
dead letters go back to) check no more on a retry: the first attempt moved those entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response
from starlette.types import Scope

from app.api.binary import encode_json

__all__ = ["REPLAYED", "SCOPE_KEY", "KeyAnswer", "has_key_answer", "items_answer", "key_answer"]

SCOPE_KEY = "xstreams.key_answer"
REPLAYED = (b"idempotent-replayed", b"true")


@dataclass(slots=True)
class KeyAnswer:
    """The key's answer to a request: a kept response (``replayed``) or the key's error."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    replayed: bool
    taken: bool = False  # a route sent it (else the route answered on its own: a refusal)

    def response(self, body: bytes | None = None) -> Response:
        response = Response(self.body if body is None else body, self.status)
        headers = self.headers
        if body is not None:
            headers = [(k, v) for k, v in headers if k != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
        response.raw_headers = [*headers, REPLAYED] if self.replayed else list(headers)
        self.taken = True
        return response


def key_answer(scope: Scope) -> Response | None:
    """The key's answer, for a route whose access check passed; None: run the request."""
    answer: KeyAnswer | None = scope.get(SCOPE_KEY)
    return None if answer is None else answer.response()


def has_key_answer(scope: Scope) -> bool:
    return SCOPE_KEY in scope


def items_answer(scope: Scope, replaced: Mapping[int, Any]) -> Response:
    """``key_answer`` for /pipeline and /multi-exec (``has_key_answer``): a kept 200 answer
    (one item a command) with the items of ``replaced`` (by index) put instead of the kept
    ones: a command the check refuses now answers its refusal, a SCAN its listing for this
    caller."""
    answer: KeyAnswer = scope[SCOPE_KEY]
    if not replaced or not answer.replayed or answer.status != 200:
        return answer.response()
    items = json.loads(answer.body)  # (the standard parser takes ``\udcNN``: app/api/binary)
    if not isinstance(items, list) or max(replaced) >= len(items):  # not a kept list of items
        first = replaced[min(replaced)]
        return Response(encode_json(first), 403, media_type="application/json")
    changed = False
    for i, item in replaced.items():
        if items[i] != item:
            items[i] = item
            changed = True
    return answer.response(encode_json(items) if changed else None)
