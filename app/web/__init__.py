"""The dashboard: static files served at ``/ui/`` (``app/api/dashboard.py``).

Plain HTML, CSS and JavaScript modules under ``static/``: nothing to build at install or
start, no library (so none to vendor). The page reaches the service only through the public
API (``/v1`` REST and SSE, with the credential its user signs in with), so it is also a
working example of a browser client. The files ship inside the package (package data in
pyproject.toml), so a wheel carries them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STATIC"]

STATIC = Path(__file__).resolve().parent / "static"
