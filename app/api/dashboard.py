"""``/ui/``: the dashboard's static files (``app/web``), served without credentials.

Only the files are open: they hold nothing secret, and the page signs in by calling the API
with the key or JWT its user types (kept in the tab's ``sessionStorage``), so every read and
write it makes is checked as any client's is. The gate exempts exactly the GET and HEAD
requests these files answer (``served_paths``): any other method or path under ``/ui`` needs
credentials like the rest, so none can fall through to another route (``POST /ui`` would
reach the command endpoint's catch-all) without them.

The files are answered with a strict Content-Security-Policy (scripts and styles from this
origin only, no inline code, no framing), so a value that reached the page as text could not
run as script even if a bug rendered it as markup; and with ``Cache-Control: no-cache``, so an
upgraded service serves its own files at once (StaticFiles' ETag makes revalidation cheap).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from app.web import STATIC

__all__ = ["PREFIX", "install", "served_paths"]

PREFIX = "/ui"

HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


class DashboardFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def served_paths() -> frozenset[str]:
    """Every path the dashboard answers with a file (or, for ``/ui``, the redirect to it):
    ``/ui/`` (its index) and ``/ui/<file>`` for each file shipped under ``app/web/static``."""
    files = (p for p in STATIC.rglob("*") if p.is_file())
    return frozenset(
        {PREFIX, PREFIX + "/"} | {f"{PREFIX}/{p.relative_to(STATIC).as_posix()}" for p in files}
    )


async def _to_slash(_: object) -> Response:
    return RedirectResponse(PREFIX + "/", status_code=308)


def install(app: FastAPI) -> None:
    """Serve ``/ui/`` (``/ui`` redirects there). Call before the command endpoint's catch-all,
    which would otherwise take ``GET /ui`` for a command named UI."""
    app.router.routes.append(Route(PREFIX, _to_slash, methods=["GET", "HEAD"]))
    app.router.routes.append(Mount(PREFIX, DashboardFiles(directory=STATIC, html=True), name="ui"))
