"""A browser's ``GET /`` goes to the dashboard (``/ui/``); every other client's is unchanged.

``GET /`` belongs to the command endpoint (the Upstash protocol: an empty command, answered
``{"error": "ERR empty command"}``), and clients (curl's ``Accept: */*``, SDKs) keep that
answer. A browser asks for a page: its Accept header puts ``text/html`` first, so it is sent
to the dashboard instead. The redirect sits outside the access and loading gates: it reveals
nothing, and the dashboard's files are served without credentials anyway (app/api/dashboard).
It varies on Accept, so no cache hands one client's answer to the other.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.dashboard import PREFIX

__all__ = ["BrowserHome", "prefers_html"]

PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def prefers_html(accept: str) -> bool:
    """Whether ``accept`` ranks a page first: its highest quality goes to ``text/html`` (or
    XHTML), the first listed winning a tie. ``*/*`` alone, or JSON first, is not a page."""
    best, best_q = "", -1.0
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > best_q:
            best, best_q = media.lower(), q
    return best in PAGE_TYPES and best_q > 0


class BrowserHome:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/" and scope["method"] == "GET":
            accept = next((v for k, v in scope["headers"] if k == b"accept"), b"")
            if prefers_html(accept.decode("latin-1")):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 307,
                        "headers": [
                            (b"location", (scope.get("root_path", "") + PREFIX + "/").encode()),
                            (b"vary", b"accept"),
                            (b"content-length", b"0"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
