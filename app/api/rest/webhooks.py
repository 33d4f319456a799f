"""Webhooks (issue 28): a group's consumers that POST what they take to an HTTP endpoint.
This is their configuration; the delivery is app/delivery's, from what is set here.

Each route parses, makes its backend call and shapes the answer, as the delivery policy's do
(app/api/rest/delivery.py). A webhook's secret is taken in and never shown: no reply carries
it, and the request log writes paths, never bodies.

Creating a webhook also creates its consumer in the group (XGROUP CREATECONSUMER), first,
so it shows in XINFO CONSUMERS at once and a group holding its most consumers refuses the
webhook (409) before anything is set. Removing one leaves its consumer and what that holds
pending, for another consumer to claim (XCLAIM), as deleting any client leaves them.

PUT checks the destination first, as each request will (``WebhookRunner.check``: scheme,
host glob, DNS and addresses): a webhook that could never be delivered is a 422 naming the
setting that would allow it, and nothing is written. Every view carries the webhook's
health (``Backend.webhook_health``).

PATCH reads the webhook and writes it back changed: two calls, like a client's; a DELETE by
another client between them is undone by the write (the webhook comes back, paused as
asked), as a PUT after that DELETE would.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import Response

from app.api.rest.common import (
    ConsumerName,
    GroupName,
    StreamName,
    errors,
    router,
    segment,
    stream_url,
)
from app.api.rest.explain import on_group, parsed_on_group
from app.api.rest.schemas.problem import Problem
from app.api.rest.schemas.webhooks import (
    WebhookList,
    WebhookPause,
    WebhookSet,
    WebhookView,
    webhook_view,
)
from app.api.services import Services, ServicesDep
from app.backends import Backend
from app.delivery.outbound import Refused
from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.errors import NotFound
from app.engine.webhook_health import WebhookHealth

api = router("/v1/streams/{stream}/groups/{group}/webhooks", "webhooks")

PAUSED_BY_REQUEST = "paused by request"
# What a group without a delivery policy gets with its first webhook: retries spaced out
# (an XNACK'ed entry would otherwise wait for a claim that no webhook makes).
WEBHOOK_DEFAULT_POLICY = DeliveryPolicy(backoff_ms=(1000, 5000, 30000, 60000))


def no_webhook(stream: str, group: str, name: str) -> NotFound:
    return NotFound(f"ERR no webhook '{name}' in consumer group '{group}' of '{stream}'")


async def _views(services: Services, hooks: list[Webhook]) -> list[WebhookView]:
    """The webhooks with their health; one this process does not run (its URL's scheme or
    host refused) shows why as its error."""
    health = await services.backend.webhook_health(hooks)
    out = []
    for hook, known in zip(hooks, health, strict=True):
        not_run = services.webhooks.not_run(hook)
        if not_run is not None:
            known = replace(known or WebhookHealth(), last_status=None, last_error=not_run)
        refused = services.webhooks.refused_reason(hook)
        out.append(webhook_view(hook, known, refused))
    return out


async def _view(services: Services, hook: Webhook) -> WebhookView:
    return (await _views(services, [hook]))[0]


async def _named(backend: Backend, stream: str, group: str, name: str) -> Webhook:
    """The webhook, or the path's 404: NOGROUP when the group is missing, else none named so."""
    for hook in await backend.webhooks(stream, group):
        if hook.name == name:
            return hook
    await on_group(backend, stream, group, backend.group(stream, group))
    raise no_webhook(stream, group, name)


@api.get(
    "",
    operation_id="list_webhooks",
    summary="List a group's webhooks",
    response_model=WebhookList,
    responses=errors(404),
)
async def list_webhooks(stream: StreamName, group: GroupName, services: ServicesDep) -> WebhookList:
    """The group's webhooks by name, each with its state (`paused`, `paused_reason`) and
    health (`last_status`, `last_error`, `last_attempt_at_ms`, `last_success_at_ms`,
    `consecutive_failures`), never its secret. Each is a consumer of the group (XINFO
    CONSUMERS) named after it. One whose URL this service's settings refuse outright is
    not run, and `last_error` says why."""
    backend = services.backend
    hooks = await backend.webhooks(stream, group)
    if not hooks:  # none, or no group: the look tells them apart
        await on_group(backend, stream, group, backend.group(stream, group))
    return WebhookList(webhooks=await _views(services, hooks))


@api.get(
    "/{name}",
    operation_id="get_webhook",
    summary="Get a webhook",
    response_model=WebhookView,
    responses=errors(404),
)
async def get_webhook(
    stream: StreamName, group: GroupName, name: ConsumerName, services: ServicesDep
) -> WebhookView:
    """One webhook with its state and health, never its secret; the consumer it is shows in
    XINFO CONSUMERS and what it holds in XPENDING."""
    return await _view(services, await _named(services.backend, stream, group, name))


@api.put(
    "/{name}",
    operation_id="set_webhook",
    summary="Set a webhook",
    response_model=WebhookView,
    responses={
        **errors(404, 409, 413),
        201: {"model": WebhookView, "description": "Created."},
        422: {
            "model": Problem,
            "description": "The body is malformed, or the destination is refused.",
        },
    },
)
async def set_webhook(
    stream: StreamName,
    group: GroupName,
    name: ConsumerName,
    body: WebhookSet,
    services: ServicesDep,
    response: Response,
) -> WebhookView:
    """Create the webhook (201, with `Location`) or replace it whole (200): a consumer of
    the group named `name` (XGROUP CREATECONSUMER) whose entries, as XREADGROUP `>` gives
    them, are POSTed to `url`, signed per Standard Webhooks with `secret`; a 2xx answer
    acknowledges them (XACK), anything else releases them (XNACK FAIL) for the group's
    delivery policy to retry or dead-letter. A replaced webhook runs (a pause is lifted).
    Needs `admin`. A value out of range, or a URL that is not http(s), is a 400.

    Retries come from the group's delivery policy: a group without one gets
    `{"backoff_ms": [1000, 5000, 30000, 60000]}` with its first webhook, so a failed entry
    comes back (set `max_deliveries` and a `dead_letter_stream` to park the hopeless ones).
    Where the service may send is its `--webhook-allow-host` list, https only unless
    `--webhook-allow-http`, public addresses only unless `--webhook-allow-private`: a URL
    they refuse now (its name resolved, as each request does) is a 422 naming the rule.
    One refused later (a name that now resolves elsewhere) shows in `last_error`."""
    backend = services.backend
    hook = await parsed_on_group(backend, stream, group, lambda: body.webhook(stream, group, name))
    try:
        await services.webhooks.check(hook.url)
    except Refused:  # the path's 404 first, as for a body the parse refuses
        await on_group(backend, stream, group, backend.group(stream, group))
        raise
    await on_group(backend, stream, group, backend.create_consumer(stream, group, name))
    if await backend.delivery_policy(stream, group) is None:
        await backend.set_delivery_policy(stream, group, WEBHOOK_DEFAULT_POLICY)
    if await on_group(backend, stream, group, backend.set_webhook(hook)):
        response.status_code = 201
        response.headers["Location"] = (
            f"{stream_url(stream)}/groups/{segment(group)}/webhooks/{segment(name)}"
        )
    services.webhooks.changed()
    return await _view(services, hook)


@api.patch(
    "/{name}",
    operation_id="pause_webhook",
    summary="Pause or resume a webhook",
    response_model=WebhookView,
    responses=errors(404, 413),
)
async def pause_webhook(
    stream: StreamName,
    group: GroupName,
    name: ConsumerName,
    body: WebhookPause,
    services: ServicesDep,
) -> WebhookView:
    """`{"paused": true}` stops the webhook taking entries (XREADGROUP): what it holds stays
    pending; `{"paused": false}` resumes it, clearing `paused_reason` (a receiver's 410 Gone
    pauses it too, and names that). Needs `admin`."""
    backend = services.backend
    hook = await _named(backend, stream, group, name)
    if body.paused and hook.paused:
        return await _view(services, hook)  # already paused: its reason stays
    reason = PAUSED_BY_REQUEST if body.paused else None
    changed = replace(hook, paused=body.paused, paused_reason=reason)
    await on_group(backend, stream, group, backend.set_webhook(changed))
    services.webhooks.changed()
    return await _view(services, changed)


@api.delete(
    "/{name}",
    operation_id="delete_webhook",
    summary="Remove a webhook",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_webhook(
    stream: StreamName, group: GroupName, name: ConsumerName, services: ServicesDep
) -> Response:
    """Stop and remove the webhook. Its consumer stays with what it holds pending, for
    another consumer to claim (XCLAIM) or for XGROUP DELCONSUMER. Removing it again answers
    404."""
    backend = services.backend
    if not await on_group(backend, stream, group, backend.delete_webhook(stream, group, name)):
        raise no_webhook(stream, group, name)
    services.webhooks.changed()
    return Response(status_code=204)
