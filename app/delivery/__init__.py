"""What runs beside requests (DESIGN.md): stream retention, trimmed in the background. Talks
only to the Backend, so it runs alike in front of the embedded engine and of Redis."""

from app.delivery.retention import Retainer

__all__ = ["Retainer"]
