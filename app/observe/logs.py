"""Log lines as text or as JSON (``--log-format``), each carrying its request's ID.

The request ID lives in a context variable set by the ``Observe`` middleware for the whole of
a request, so any line logged while serving it (an access line, a warning, a traceback) can
name it without being handed it. In JSON, a line is one object: ``time`` (UTC, ISO 8601 with
ms), ``level``, ``logger``, ``message``, ``request_id`` when there is one, the fields a line
adds (the access line's ``method``, ``path``, ``route``, ``status``, ``duration_ms``,
``client``) and ``exception``. Secrets: the finished line goes through ``redact`` (query
credentials), after the handler's ``RedactSecrets`` filter has done the same to the message;
no header is ever logged, so neither ``Authorization`` nor a cookie can be.
"""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import orjson

from app.redaction import redact

__all__ = ["REQUEST_ID", "JsonFormatter", "LogFormat", "RequestIdFilter", "configure_logging"]

REQUEST_ID: ContextVar[str | None] = ContextVar("xstreams_request_id", default=None)
TEXT_FORMAT = "%(levelname)s:     %(name)s: %(message)s"


class LogFormat(StrEnum):
    """How ``xstreams serve`` writes its log lines (``--log-format``)."""

    TEXT = "text"  # uvicorn's style, for a terminal
    JSON = "json"  # one JSON object a line, for a log collector


class RequestIdFilter(logging.Filter):
    """Stamp each record with the ID of the request being served when it was logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            doc["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            doc.update(fields)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["exception"] = record.exc_text
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return redact(orjson.dumps(doc, default=str).decode())


def configure_logging(level: str, log_format: LogFormat) -> None:
    """The root logger's one handler (stderr) in the chosen format; uvicorn's loggers reach it
    in JSON (``xstreams serve`` then gives uvicorn no log configuration of its own)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
