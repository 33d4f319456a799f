"""What runs beside requests (DESIGN.md): stream retention, trimmed in the background, and
webhook consumers, delivered in the background. Talks only to the Backend, so it runs alike
in front of the embedded engine and of Redis."""

from app.delivery.hook import HookOptions, HookWorker, Outcome
from app.delivery.outbound import OutboundRules, Refused
from app.delivery.retention import Retainer
from app.delivery.runner import WebhookRunner, store_pause

__all__ = [
    "HookOptions",
    "HookWorker",
    "OutboundRules",
    "Outcome",
    "Refused",
    "Retainer",
    "WebhookRunner",
    "store_pause",
]
