"""Webhooks (issue 28): the body that sets one, the body that pauses one, and what is shown.

The numbers are checked by the engine's one rule (``app.engine.delivery.Webhook``): a value
out of range is a 400 with its text, on every backend. The secret goes in and never comes
out: no reply model has a field for it. A webhook is shown with its health, as its loops
last stored it (app/engine/webhook_health.py).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from app.api.rest.schemas.body import KEEP_BYTES, Body
from app.engine.delivery import (
    MAX_WEBHOOK_BATCH,
    MAX_WEBHOOK_CONCURRENCY,
    MAX_WEBHOOK_TIMEOUT_MS,
    Webhook,
)
from app.engine.ids import INT64_MAX, INT64_MIN
from app.engine.webhook_health import WebhookHealth

__all__ = ["WebhookList", "WebhookPause", "WebhookSet", "WebhookView", "webhook_view"]

Int = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Text = Annotated[str, Field(min_length=1), KEEP_BYTES]
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Webhook)}

SET_EXAMPLE: JsonDict = {
    "url": "https://hooks.example.com/orders",
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "timeout_ms": 5000,
    "concurrency": 8,
    "batch": 1,
}
VIEW_EXAMPLE: JsonDict = {
    "name": "orders-hook",
    "url": "https://hooks.example.com/orders",
    "timeout_ms": 5000,
    "concurrency": 8,
    "batch": 1,
    "paused": True,
    "paused_reason": "paused by request",
    "state": "paused",
    "reason": "paused by request",
    "last_status": 503,
    "last_error": "https://hooks.example.com/orders answers 503",
    "last_attempt_at_ms": 1767225600000,
    "last_success_at_ms": 1767225540000,
    "consecutive_failures": 3,
}


class WebhookSet(Body):
    """A webhook: where the group's entries are POSTed, signed with what, how fast."""

    model_config = ConfigDict(json_schema_extra={"examples": [SET_EXAMPLE]})

    url: Text = Field(
        description="The http(s) URL each entry (or batch) is POSTed to. Where the service "
        "may send is its allow-list's to say (`--webhook-allow-host`): checked when set "
        "(422) and as it sends.",
    )
    secret: Text = Field(
        description="The signing secret of the Standard Webhooks specification: `whsec_` and "
        "16 bytes or more in base64. Kept by the service, never shown again.",
    )
    timeout_ms: Int = Field(
        _DEFAULTS["timeout_ms"],
        description=f"How long one request may take (1 to {MAX_WEBHOOK_TIMEOUT_MS}); "
        "past it the entries are released (XNACK FAIL).",
    )
    concurrency: Int = Field(
        _DEFAULTS["concurrency"],
        description=f"Requests in flight at most (1 to {MAX_WEBHOOK_CONCURRENCY}): entries are "
        "delivered in order per entry, not across entries.",
    )
    batch: Int = Field(
        _DEFAULTS["batch"],
        description=f"Entries per request at most (1 to {MAX_WEBHOOK_BATCH}).",
    )

    def webhook(self, stream: str, group: str, name: str) -> Webhook:
        """The engine's webhook, running (``WrongArgument`` naming what is out of range)."""
        return Webhook(
            stream, group, name, self.url, self.secret, self.timeout_ms, self.concurrency,
            self.batch,
        )  # fmt: skip


class WebhookPause(Body):
    """Pause or resume a webhook."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"paused": True}]})

    paused: bool = Field(
        description="true: it stops taking entries (what it holds stays pending); false: it "
        "takes them again, and `paused_reason` is cleared.",
    )


class WebhookView(BaseModel):
    """A webhook as shown: everything but its secret."""

    model_config = ConfigDict(json_schema_extra={"examples": [VIEW_EXAMPLE]})

    name: str = Field(description="Its name, which is also its consumer's in the group.")
    url: str
    timeout_ms: int
    concurrency: int
    batch: int
    paused: bool
    paused_reason: str | None = Field(
        description="Why it is paused: `paused by request` (PATCH), or what the receiver "
        "answered (410 Gone); null when running.",
    )
    state: Literal["running", "paused", "refused"] = Field(
        "running",
        description="`running`; `paused` (see `paused_reason`); or `refused`: the outbound "
        "rules of this service (`--webhook-allow-host`, `--webhook-allow-http`) refuse its "
        "URL now, so it is not run and its group's entries stay where they are until the "
        "setting or the URL changes.",
    )
    reason: str | None = Field(
        None, description="Why it is not running (`paused` or `refused`); null when running."
    )
    last_status: int | None = Field(
        None, description="The HTTP status of the last attempt; null without an answer."
    )
    last_error: str | None = Field(
        None,
        description="Why the last attempt failed (the status, a timeout, a connection error, "
        "a refused destination), or why the webhook is not run; null after a success.",
    )
    last_attempt_at_ms: int | None = Field(
        None, description="When the last attempt ended (Unix time in ms); null: none yet."
    )
    last_success_at_ms: int | None = Field(
        None, description="When the last 2xx came (Unix time in ms); null: none yet."
    )
    consecutive_failures: int = Field(0, description="Attempts failed since the last success.")


class WebhookList(BaseModel):
    """A group's webhooks, by name."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"webhooks": [VIEW_EXAMPLE]}]})

    webhooks: list[WebhookView]


def webhook_view(
    hook: Webhook, health: WebhookHealth | None = None, refused: str | None = None
) -> WebhookView:
    """The webhook with its health (of its URL; none known: the nulls) and its state:
    ``refused`` is why the outbound rules refuse its URL, if they do."""
    h = health or WebhookHealth()
    state: Literal["running", "paused", "refused"]
    if hook.paused:
        state, reason = "paused", hook.paused_reason
    elif refused is not None:
        state, reason = "refused", refused
    else:
        state, reason = "running", None
    return WebhookView(
        state=state,
        reason=reason,
        name=hook.name,
        url=hook.url,
        timeout_ms=hook.timeout_ms,
        concurrency=hook.concurrency,
        batch=hook.batch,
        paused=hook.paused,
        paused_reason=hook.paused_reason,
        last_status=h.last_status,
        last_error=h.last_error,
        last_attempt_at_ms=h.last_attempt_at_ms,
        last_success_at_ms=h.last_success_at_ms,
        consecutive_failures=h.consecutive_failures,
    )
