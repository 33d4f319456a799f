"""What the compiled routes (app/api/rest/compiled.py) take from FastAPI is still there.

``Compiled`` reads a route's solved parameters, FastAPI's ``Dependant``, and a few names of
``fastapi._compat``: not a public API, read in FastAPI 0.165. pyproject.toml pins FastAPI to
the versions it was read against. A FastAPI that adds a field to ``Dependant`` (a new kind of
parameter) must send every route back to FastAPI's own solving, never compile it with the
new feature dropped; one that renames what ``Compiled`` reads must fail here, at once.
"""

from __future__ import annotations

import dataclasses
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import BackgroundTasks, Cookie, Depends, FastAPI, Header
from fastapi.dependencies.models import Dependant
from packaging.requirements import Requirement
from pydantic import BaseModel

from app.api.rest import compiled
from app.api.rest.common import RestRoute
from app.api.rest.compiled import DEPENDANT, ROUTE, SERVICE, Compiled, FastRoutes, install
from app.api.services import get_backend
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.api.inproc import InprocTransport

ROOT = Path(__file__).resolve().parents[3]


def test_the_installed_fastapi_is_one_the_pin_allows() -> None:
    """The pin and the installed FastAPI agree, so these tests speak of the FastAPI that runs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [Requirement(r) for r in project["dependencies"] if r.startswith("fastapi")]
    assert pin.specifier.contains(version("fastapi")), (pin, version("fastapi"))
    assert pin.specifier.contains("0.165.0")
    assert not pin.specifier.contains("0.166.0"), "an upper bound: raise it with this file green"


def test_every_field_of_dependant_is_on_the_allow_list() -> None:
    """A field FastAPI added is named here, so someone decides whether a compiled route may
    hold it; until then no route compiles (``test_a_route_with_an_unknown_feature...``)."""
    fields = {f.name for f in dataclasses.fields(Dependant)}
    assert fields - DEPENDANT.keys() == set(), "new in FastAPI: decide, then list in compiled.py"
    assert DEPENDANT.keys() - fields == set(), "gone from FastAPI: compiled.py reads it in vain"
    assert SERVICE.keys() == DEPENDANT.keys()


def test_the_route_settings_compiled_reads_are_fastapis() -> None:
    async def endpoint(name: str) -> Reply:
        return Reply(value=name)

    _, route, _ = _served(endpoint)
    for name in ROUTE:
        assert hasattr(route, name), f"APIRoute.{name} is gone: compiled.ROUTE reads it"


def test_the_private_helpers_compiled_calls_exist() -> None:
    assert compiled.field_annotation_is_sequence(list[str]) is True
    assert compiled.field_annotation_is_sequence(str) is False
    assert callable(compiled.FieldInfo.merge_field_infos)


class Reply(BaseModel):
    value: str


def _served(endpoint: Any, **options: Any) -> tuple[FastAPI, RestRoute, Compiled | None]:
    """``endpoint`` as a /v1 route of the service's app (a REST route, modelled as XINFO
    STREAM for the access check), the fast path installed anew: the app, the route, and the
    route compiled (None when it is left to FastAPI)."""
    app = create_app(Settings(), store=Store())
    app.router.add_api_route(
        "/v1/things/{name}",
        endpoint,
        methods=["GET"],
        operation_id="get_stream",
        route_class_override=RestRoute,
        **options,
    )
    route = app.router.routes[-1]
    assert isinstance(route, RestRoute)
    app.router.routes.insert(0, app.router.routes.pop())  # before the /v1 fallback
    app.router.routes[:] = [r for r in app.router.routes if not isinstance(r, FastRoutes)]
    fast = install(app)
    (found,) = [c for c in fast.compiled if c.route is route] or [None]
    return app, route, found


def _get(app: FastAPI, path: str) -> httpx.Response:
    with httpx.Client(transport=InprocTransport(app), base_url="http://xs") as client:
        return client.get(path)


def test_a_plain_route_compiles() -> None:
    """The counterpart of the refusals below: the same shape without the feature compiles."""

    async def plain(name: str, backend: Annotated[Any, Depends(get_backend)]) -> Reply:
        return Reply(value=name)

    app, _, found = _served(plain)
    assert found is not None
    r = _get(app, "/v1/things/a")
    assert r.status_code == 200, r.text
    assert r.json() == {"value": "a"}


def _own() -> str:
    return "own"


async def _header(name: str, x_thing: Annotated[str, Header()] = "h") -> Reply:
    return Reply(value=name + x_thing)


async def _cookie(name: str, c: Annotated[str, Cookie()] = "h") -> Reply:
    return Reply(value=name + c)


async def _background(name: str, tasks: BackgroundTasks) -> Reply:
    return Reply(value=name + "h")


async def _dependency(name: str, o: Annotated[str, Depends(_own)]) -> Reply:
    return Reply(value=name + "h")


async def _plain(name: str) -> Reply:
    return Reply(value=name + "h")


@pytest.mark.parametrize(
    ("endpoint", "options"),
    [
        (_header, {}),
        (_cookie, {}),
        (_background, {}),
        (_dependency, {}),
        (_plain, {"max_body_size": 10}),
    ],
    ids=["header", "cookie", "background tasks", "another dependency", "a body limit"],
)
def test_a_route_with_a_feature_off_the_list_falls_back_to_fastapi(
    endpoint: Any, options: dict[str, Any]
) -> None:
    """Headers, cookies, background tasks, a dependency that is not a known service and a
    route's own body limit are FastAPI's to solve: such a route is not compiled, and still
    answers, through FastAPI."""
    app, _, found = _served(endpoint, **options)
    assert found is None
    r = _get(app, "/v1/things/a")
    assert r.status_code == 200, r.text
    assert r.json() == {"value": "ah"}


def test_a_dependant_with_a_field_fastapi_added_later_is_not_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unknown means unsupported: a ``Dependant`` field the allow list does not name (as if a
    later FastAPI added one) keeps the route out of the fast path."""
    _, route, found = _served(_plain)
    assert found is not None
    monkeypatch.delitem(DEPENDANT, "use_cache")
    assert Compiled.of(route) is None


def test_dependency_overrides_send_a_request_through_fastapi() -> None:
    """An app's ``dependency_overrides`` are FastAPI's to apply: a compiled route hands such
    a request over, so the override is what the endpoint gets."""

    async def stand_in() -> Any:
        return "stand-in"

    async def plain(name: str, backend: Annotated[Any, Depends(get_backend)]) -> Reply:
        return Reply(value=str(backend))

    app, _, found = _served(plain)
    assert found is not None
    app.dependency_overrides[get_backend] = stand_in
    r = _get(app, "/v1/things/a")
    assert r.status_code == 200, r.text
    assert r.json() == {"value": "stand-in"}
