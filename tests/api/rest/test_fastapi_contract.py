"""What the compiled routes (app/api/rest/compiled.py) take from FastAPI is still there.

``Compiled`` reads a route's solved parameters, FastAPI's ``Dependant``, the settings its
request handler takes, and a few names of ``fastapi._compat``: not a public API, read in
FastAPI 0.165. pyproject.toml pins FastAPI to the versions it was read against. A FastAPI
that adds a field to ``Dependant`` or a setting to its handler (a new feature) must send
every route back to FastAPI's own solving, never compile it with the feature dropped; one
that renames what ``Compiled`` reads must fail here, at once, naming it.
"""

from __future__ import annotations

import dataclasses
import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, BackgroundTasks, Cookie, Depends, FastAPI, Header, Response
from fastapi import routing as fastapi_routing
from fastapi._compat import field_annotation_is_sequence
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.params import Body, Form
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from packaging.requirements import Requirement
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from app.api.rest.common import RestRoute
from app.api.rest.compiled import Compiled, FastRoutes, install
from app.api.rest.features import DEPENDANT, ROUTE, SERVICE
from app.api.services import get_backend
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.api.inproc import InprocTransport

ROOT = Path(__file__).resolve().parents[3]

# Every route compiled today: one that stops compiling takes the slow way without a word.
COMPILED = {
    "ack_delete_entries",
    "list_key_usage",
    "ack_entries",
    "append_entries",
    "autoclaim_entries",
    "claim_entries",
    "configure_stream",
    "create_consumer",
    "create_group",
    "delete_consumer",
    "delete_entries",
    "delete_entry",
    "delete_group",
    "delete_policy",
    "delete_retention",
    "delete_stream",
    "delete_webhook",
    "get_entry",
    "get_group",
    "get_pending",
    "get_policy",
    "get_retention",
    "get_stream",
    "get_webhook",
    "get_whoami",
    "list_consumers",
    "list_entries",
    "list_groups",
    "list_streams",
    "list_webhooks",
    "nack_entries",
    "pause_webhook",
    "read_group",
    "read_streams",
    "redrive_entries",
    "set_group_id",
    "set_last_id",
    "set_policy",
    "set_retention",
    "set_webhook",
    "trim_stream",
}


def test_the_installed_fastapi_is_one_the_pin_allows() -> None:
    """The pin and the installed FastAPI agree, so these tests speak of the FastAPI that runs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [Requirement(r) for r in project["dependencies"] if r.startswith("fastapi")]
    assert pin.specifier.contains(version("fastapi")), (pin, version("fastapi"))
    assert not pin.specifier.contains("0.166.0"), "an upper bound: raise it with this file green"


def test_every_field_of_dependant_is_on_the_allow_list() -> None:
    """A field FastAPI added is named in app/api/rest/features.py, so someone decides whether
    a compiled route may hold it; until then no route compiles."""
    fields = {f.name for f in dataclasses.fields(Dependant)}
    assert fields - DEPENDANT.keys() == set(), "new in FastAPI's Dependant: decide in features.py"
    assert DEPENDANT.keys() - fields == set(), "gone from FastAPI's Dependant: features.py reads it"
    assert SERVICE.keys() == DEPENDANT.keys()


def test_every_setting_of_the_request_handler_is_on_the_allow_list() -> None:
    """``get_request_handler``'s parameters are how FastAPI answers for a route; each is
    named in ``ROUTE`` with the route attribute ``APIRoute.get_route_handler`` passes."""
    taken = set(inspect.signature(fastapi_routing.get_request_handler).parameters)
    named = ROUTE.keys() - {"max_body_size"}
    assert taken - named == set(), "new in get_request_handler: decide in features.ROUTE"
    assert named - taken == set(), "gone from get_request_handler: features.ROUTE reads it"
    passing = inspect.getsource(APIRoute.get_route_handler)
    for parameter, (attribute, _) in ROUTE.items():
        if parameter != "max_body_size":
            assert f"{parameter}=route.{attribute}" in passing or (
                f"{parameter}=self.{attribute}" in passing
            ), f"APIRoute.get_route_handler no longer passes {parameter} from .{attribute}"


def test_the_route_attributes_features_reads_exist() -> None:
    app = FastAPI()
    app.get("/x")(_plain)
    route = app.router.routes[-1]
    assert isinstance(route, APIRoute)
    for _, (attribute, _) in ROUTE.items():
        assert hasattr(route, attribute), f"APIRoute.{attribute} is gone: features.ROUTE reads it"
    assert route.max_body_size is None
    strict = route.strict_content_type  # a ``DefaultPlaceholder`` where the router's is kept
    assert (strict.value if isinstance(strict, DefaultPlaceholder) else strict) is True


def test_the_private_helpers_compiled_calls_exist() -> None:
    """``fastapi._compat`` and the parameter classes, as ``_parts`` uses them."""
    assert field_annotation_is_sequence(list[str]) is True
    assert field_annotation_is_sequence(str) is False
    assert callable(FieldInfo.merge_field_infos)
    assert issubclass(Form, Body) and hasattr(Body(), "embed")
    app = FastAPI()
    app.post("/x/{name}")(_with_body)
    route = app.router.routes[-1]
    assert isinstance(route, APIRoute)
    (field,) = route.dependant.body_params
    assert (field.name, field.alias, type(field.field_info)) == ("item", "item", Body)
    (path,) = route.dependant.path_params
    assert isinstance(path.field_info, FieldInfo)


def test_an_included_router_is_seen_through_as_paths_expects() -> None:
    """app/api/rest/paths.py looks inside an included router (``original_router``) unless
    its inclusion (``include_context``) adds a prefix, dependencies or a body limit."""
    router = APIRouter()
    router.get("/x")(_plain)
    app = FastAPI()
    app.include_router(router)
    included = app.router.routes[-1]
    assert getattr(included, "original_router", None) is router
    context = included.include_context  # type: ignore[attr-defined]
    assert (context.prefix, context.dependencies, context.max_body_size) == ("", [], None)


class Reply(BaseModel):
    value: str


async def _with_body(name: str, item: Reply) -> Reply:
    return item


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


def _get(app: FastAPI, path: str, **options: Any) -> httpx.Response:
    with httpx.Client(transport=InprocTransport(app), base_url="http://xs") as client:
        return client.get(path, **options)


def _own() -> str:
    return "own"


async def _plain(name: str) -> Reply:
    return Reply(value=name + "h")


async def _header(name: str, x_thing: Annotated[str, Header()] = "h") -> Reply:
    return Reply(value=name + x_thing)


async def _cookie(name: str, c: Annotated[str, Cookie()] = "h") -> Reply:
    return Reply(value=name + c)


async def _background(name: str, tasks: BackgroundTasks) -> Reply:
    tasks.add_task(_own)
    return Reply(value=name + "h")


async def _dependency(name: str, o: Annotated[str, Depends(_own)]) -> Reply:
    return Reply(value=name + "h")


_bearer = HTTPBearer(auto_error=False)


async def _security(name: str, token: Annotated[Any, Depends(_bearer)]) -> Reply:
    return Reply(value=name + ("h" if token is None else "?"))


def test_a_plain_route_compiles() -> None:
    """The counterpart of the refusals below: the same shape without the feature compiles."""

    async def plain(name: str, backend: Annotated[Any, Depends(get_backend)]) -> Reply:
        return Reply(value=name + "h")

    app, _, found = _served(plain)
    assert found is not None
    r = _get(app, "/v1/things/a")
    assert r.status_code == 200, r.text
    assert r.json() == {"value": "ah"}


@pytest.mark.parametrize(
    ("endpoint", "options"),
    [
        (_header, {}),
        (_cookie, {}),
        (_background, {}),
        (_dependency, {}),
        (_security, {}),
        (_plain, {"max_body_size": 10}),
        (_plain, {"strict_content_type": False}),
    ],
    ids=[
        "header",
        "cookie",
        "background tasks",
        "another dependency",
        "a security dependency",
        "a body limit",
        "lax content type",
    ],
)
def test_a_route_with_a_feature_off_the_list_falls_back_to_fastapi(
    endpoint: Any, options: dict[str, Any]
) -> None:
    """Headers, cookies, background tasks, a dependency that is not a known service, security
    and a route's own body or content-type rules are FastAPI's: such a route is not compiled,
    and still answers, through FastAPI."""
    app, _, found = _served(endpoint, **options)
    assert found is None
    r = _get(app, "/v1/things/a")
    assert r.status_code == 200, r.text
    assert r.json() == {"value": "ah"}


def test_a_response_parameter_is_on_the_list_and_kept() -> None:
    """A ``Response`` parameter is one the fast path supports: the route compiles, and what
    the endpoint sets on it reaches the client."""

    async def with_response(name: str, response: Response) -> Reply:
        response.headers["x-set"] = "yes"
        return Reply(value=name + "h")

    app, _, found = _served(with_response)
    assert found is not None
    r = _get(app, "/v1/things/a")
    assert (r.status_code, r.json(), r.headers.get("x-set")) == (200, {"value": "ah"}, "yes")


def test_a_dependant_field_off_the_list_keeps_a_route_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unknown means unsupported: a ``Dependant`` field the allow list does not name (as if a
    later FastAPI added one) keeps the route out of the fast path."""
    _, route, found = _served(_plain)
    assert found is not None
    monkeypatch.delitem(DEPENDANT, "use_cache")
    assert Compiled.of(route) is None


def test_a_handler_setting_off_the_list_keeps_a_route_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A setting ``route_allowed`` cannot read on the route (as if FastAPI renamed it) keeps
    the route out too."""
    _, route, found = _served(_plain)
    assert found is not None
    monkeypatch.setitem(ROUTE, "is_json_stream", ("a_setting_fastapi_renamed", lambda v: True))
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


def test_every_route_compiled_today_still_is() -> None:
    """The fast path is not lost without a word: a FastAPI upgrade or a new check that sends
    one of these routes to FastAPI fails here, and the list is changed on purpose."""
    app = create_app(Settings(), store=Store())
    (fast,) = [r for r in app.router.routes if isinstance(r, FastRoutes)]
    assert {c.route.name for c in fast.compiled} == COMPILED
