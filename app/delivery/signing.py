"""Standard Webhooks signatures and the body of a delivery.

A delivery is signed as the Standard Webhooks specification says, as ``standardwebhooks``
(the specification's own Python package) signs (``Signer`` says how): ``webhook-id``,
``webhook-timestamp`` (Unix seconds) and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"id.timestamp.body">`` with the key in the webhook's ``whsec_<base64>`` secret. Any
Standard Webhooks or Svix library verifies it.

``webhook-id`` is derived from the stream, the group and the entry IDs, not drawn at random:
every attempt of one entry carries the same one, whichever worker sends it, so a receiver
deduplicates on it. A batch's ID covers its IDs in order, so it is stable only when the same
entries go again together; a receiver of batches deduplicates on each entry's ``id``.

The body is JSON in the one form of every surface (``app.engine.json_codec.encode_json``: bytes
that are not UTF-8 as ``\\udcNN`` escapes, as REST and SSE write them), so it is always
strict UTF-8; fields as REST's default ``object`` form (a repeated field name shows its last
value). One entry: ``{"stream", "group", "id", "fields", "delivery"}``; a webhook with
``batch`` above 1 always sends a JSON array of such objects (one shape per webhook, whatever
the number of entries that were ready).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import standardwebhooks

from app.engine.ids import StreamID
from app.engine.json_codec import encode_json
from app.engine.stream import Fields

__all__ = ["Signer", "WebhookEntry", "body_of", "webhook_id"]


@dataclass(frozen=True, slots=True)
class WebhookEntry:
    """One entry to send: its ID, fields and delivery count (1: its first delivery)."""

    id: StreamID
    fields: Fields
    delivery: int


def webhook_id(stream: str, group: str, ids: Sequence[StreamID]) -> str:
    """``msg_`` and 22 URL-safe characters, a hash of the stream, the group and the IDs."""
    h = hashlib.sha256()
    for part in (stream, group):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    for sid in ids:
        h.update(b"%d-%d," % (sid.ms, sid.seq))
    return "msg_" + base64.urlsafe_b64encode(h.digest()[:16]).decode().rstrip("=")


def _one(stream: str, group: str, d: WebhookEntry) -> dict[str, Any]:
    f = d.fields
    return {
        "stream": stream,
        "group": group,
        "id": f"{d.id.ms}-{d.id.seq}",
        "fields": dict(zip(f[0::2], f[1::2], strict=True)),
        "delivery": d.delivery,
    }


def body_of(stream: str, group: str, entries: Sequence[WebhookEntry], batch: int) -> bytes:
    """The request body: one object (``batch`` 1) or an array of them."""
    if batch == 1:
        (only,) = entries
        return encode_json(_one(stream, group, only))
    return encode_json([_one(stream, group, d) for d in entries])


class Signer:
    """Signs bodies with one webhook's secret (``whsec_`` + base64, checked by ``Webhook``).

    The HMAC is the package's (``standardwebhooks.Webhook.sign``: HMAC-SHA256 of
    ``id.timestamp.body`` under the decoded secret) computed in one ``hmac.digest`` call on
    the body's bytes: the package's ``str`` round trip and ``datetime`` cost three times the
    HMAC itself, on every delivery. tests/delivery/test_signing.py holds them equal."""

    __slots__ = ("_key",)

    def __init__(self, secret: str) -> None:
        standardwebhooks.Webhook(secret)  # its checks of the secret, and its errors
        # Decoded as the package decodes it (padding added: it may come unpadded).
        self._key = base64.b64decode(secret.removeprefix("whsec_") + "==")

    def headers(self, msg_id: str, body: bytes, now_s: float) -> dict[str, str]:
        """The three Standard Webhooks headers for ``body`` sent at ``now_s`` (Unix time)."""
        at = str(int(now_s))
        # The body is strict UTF-8 (encode_json): its bytes are what the package signs.
        mac = hmac.digest(self._key, b"%s.%s.%s" % (msg_id.encode(), at.encode(), body), "sha256")
        return {
            "webhook-id": msg_id,
            "webhook-timestamp": at,
            "webhook-signature": "v1," + base64.b64encode(mac).decode(),
        }
