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

import asyncio
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import orjson

from app.redaction import redact

__all__ = [
    "REQUEST_ID",
    "JsonFormatter",
    "LineWriter",
    "LogFormat",
    "RequestIdFilter",
    "configure_logging",
]

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


class LineWriter(logging.StreamHandler):  # type: ignore[type-arg]
    """Access lines written once per turn of the event loop, not once each.

    Every request logs its access line, and a write with its flush per line was a system
    call per request (bench/profiles/). A record marked ``batched`` (``extra``, as the access
    line is) logged on a thread running an event loop waits in ``pending`` until the end of
    the loop's current turn, with every such line of that turn, then all go out in one write.
    Any other record goes out at once, after what is pending, so lines keep their order and
    the lines of a shutdown are written before uvicorn ends the process by its signal (which
    runs no exit handlers). A kill -9 loses at most one turn's access lines.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.pending: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:  # logging's own contract: report, never raise
            self.handleError(record)
            return
        self.pending.append(line)
        if getattr(record, "batched", False):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None  # no loop on this thread: write now
            if loop is not None:
                if len(self.pending) == 1:  # else this turn's write is already due
                    loop.call_soon(self.flush)
                return
        self.flush()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            if self.pending:
                text, self.pending[:] = "".join(self.pending), []
                try:
                    self.stream.write(text)
                except Exception:  # a closed or full stream drops the lines
                    return
            if self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()


def configure_logging(level: str, log_format: LogFormat) -> None:
    """The root logger's one handler (stderr) in the chosen format; uvicorn's loggers reach it
    in JSON (``xstreams serve`` then gives uvicorn no log configuration of its own).

    No format here prints a record's thread or process, so records skip finding them
    (``logging``'s own switches for that)."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = LineWriter(sys.stderr)
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
