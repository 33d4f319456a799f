"""Secrets in query strings, masked in every log line: ``?_token=s3cret`` → ``?_token=***``.

A browser's EventSource cannot send headers, so a credential may travel in the query
(``_token``; ``access_token`` for JWT), and uvicorn's access log prints every request's path
with its query; a traceback or an error message may quote a URL too. One filter, added to every
log handler by ``xstreams serve``, rewrites what a record will print before any handler formats
it: its message, its arguments (rewritten in place, since uvicorn's access formatter reads them
by position), its exception text and its stack.

The rule: in a query (after ``?`` or ``&``), a parameter whose name, percent-decoded as the
server decodes it and in any case, is in ``SECRET_PARAMETERS`` keeps its name and loses its
value to ``***``. Any case: the service reads only the lower-case names, but a client that
sends ``?ACCESS_TOKEN=...`` or ``?_Token=...`` by mistake still sent its secret, and the log
must not keep it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from urllib.parse import unquote_plus

__all__ = ["MASK", "SECRET_PARAMETERS", "RedactSecrets", "redact", "redact_logs"]

SECRET_PARAMETERS = frozenset({"_token", "access_token"})
MASK = "***"

# name=value after ? or &; a value ends where a URL in a log line ends (space, quote, bracket).
_PARAMETER = re.compile(r"(?<=[?&])([^=&\s?#\"'<>]+)=([^&\s#\"'<>]*)")
_FORMATTER = logging.Formatter()


def redact(text: str) -> str:
    """``text`` with the value of every secret query parameter masked."""
    if "=" not in text:
        return text
    return _PARAMETER.sub(_mask, text)


def _mask(match: re.Match[str]) -> str:
    name = match.group(1)
    secret = unquote_plus(name).lower() in SECRET_PARAMETERS
    return f"{name}={MASK}" if secret else match.group(0)


def _redact_arg(arg: object) -> object:
    if isinstance(arg, str):
        return redact(arg)
    if isinstance(arg, int | float | bytes) or arg is None:
        return arg  # kept as they are: %d and friends need the number
    text = str(arg)  # a URL object, an exception quoting one
    masked = redact(text)
    return arg if masked == text else masked


class RedactSecrets(logging.Filter):
    """Masks every record, but one its logger marked ``redacted`` (``extra``): the access
    line, built from a path already masked and values that cannot hold a query."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "redacted", False):
            return True
        record.msg = _redact_arg(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_arg(a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: _redact_arg(v) for k, v in record.args.items()}
        if record.exc_info and not record.exc_text:
            text = _FORMATTER.formatException(record.exc_info)
            masked = redact(text)
            if masked != text:  # else the handler's formatter formats it as usual
                record.exc_text = masked
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redact_logs() -> None:
    """Add the filter to every log handler configured so far (the root's, uvicorn's) and to
    uvicorn's access logger; call it once logging is set up."""
    secrets = RedactSecrets()
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, RedactSecrets) for f in handler.filters):
                handler.addFilter(secrets)
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactSecrets) for f in access.filters):
        access.addFilter(secrets)
