"""Each /v1 operation solved once at start, so a request pays only for its own values.

FastAPI finds a route by walking its routers and solves a route's parameters through its
dependency graph, per request, in Python: for a one-entry append that cost more than the
append itself (bench/profiles/rest-xadd.txt, as first committed). None of it depends on the
request.
So ``Compiled`` reads a route's parameters once: the path, query and body values it takes,
validated together by one pydantic model built from FastAPI's own field definitions (one
validator call a request, not one a field), and the services it depends on. ``FastRoutes``,
first in the app's router, asks ``RouteTable`` (app/api/rest/paths.py) which route serves a
/v1 request, as Starlette would pick it, and calls that route's endpoint.

What it cannot solve as FastAPI would, an invalid value, a body that is not JSON, goes to
FastAPI's routing unchanged (``FALLBACK``), which answers as it always did: every error a
request can meet here is FastAPI's own. Solving runs no handler code, so handing over is
always safe. A route is compiled only when every feature it uses is on an allow list
(app/api/rest/features.py); anything else, a feature a later FastAPI adds included, is left
to FastAPI whole. FastAPI is pinned in pyproject.toml to the versions this was read
against; tests/api/rest/test_fastapi_contract.py fails when one differs.
``tests/api/rest/test_compiled.py`` holds the two to the same values, route by route.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from types import UnionType
from typing import Any, Union, get_args, get_origin

from fastapi import FastAPI, Response
from fastapi._compat import field_annotation_is_sequence
from fastapi.params import Body, Form
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Json, ValidationError, create_model
from pydantic.fields import FieldInfo
from starlette.routing import Match, NoMatchFound
from starlette.types import Receive, Scope, Send

from app.api.rest.common import Encoded, RestRoute, answered, sub_response
from app.api.rest.features import DEPENDANT, SERVICE, allowed, route_allowed
from app.api.rest.paths import RouteTable, Shortcut
from app.api.rest.request import RestRequest, is_json
from app.api.services import Services, get_backend, get_services, services_of

__all__ = ["FALLBACK", "Compiled", "FastRoutes", "install"]

# Set on a request handed back to FastAPI's routing: ``FastRoutes`` then lets it pass.
FALLBACK = "xstreams.fallback"

# The dependencies a compiled route may take, each as what it gives for a request.
_SERVICES: dict[Callable[..., Any], Callable[[Services], Any]] = {
    get_services: lambda services: services,
    get_backend: lambda services: services.backend,
}
_ANSWERS = (BaseModel, Response, Encoded)


class _Values(BaseModel):
    """The base of every route's request model: unknown query names are ignored, as
    FastAPI ignores them; values are checked as FastAPI checks a parameter (lax)."""

    model_config = ConfigDict(extra="ignore")


class Compiled:
    """One route's parameters, read once: which values a request supplies and how each is
    checked (``model``), which services and objects the endpoint takes besides."""

    __slots__ = (
        "body",
        "call",
        "lists",
        "model",
        "overrides",
        "request_name",
        "response_name",
        "route",
        "scalars",
        "services",
    )

    def __init__(self, route: RestRoute, parts: _Parts) -> None:
        self.route = route
        self.call = route.dependant.call
        self.model = parts.model
        self.scalars = parts.scalars  # query (alias, name), one value each (the last given)
        self.lists = parts.lists  # query (alias, name), every value
        self.body = parts.body  # the body parameter's name, or None
        self.services = parts.services
        self.request_name = route.dependant.request_param_name
        self.response_name = route.dependant.response_param_name
        # The app, whose ``dependency_overrides`` (tests set them) FastAPI reads per request.
        self.overrides = route.dependency_overrides_provider

    @classmethod
    def of(cls, route: APIRoute) -> Compiled | None:
        """The route compiled, or None when it takes something only FastAPI solves."""
        if not isinstance(route, RestRoute) or route.dependant.call is None:
            return None
        if not _answers_a_response(route):
            return None
        parts = _parts(route)
        return None if parts is None else cls(route, parts)

    def values(self, request: RestRequest) -> dict[str, Any] | None:
        """The endpoint's arguments for ``request``, or None if FastAPI must decide."""
        if getattr(self.overrides, "dependency_overrides", None):
            return None  # FastAPI's to apply, per request
        given: dict[str, Any] = dict(request.path_params)
        if self.scalars or self.lists:
            query = request.query_params
            for alias, name in self.scalars:
                value = query.get(alias)
                if value is not None:
                    given[name] = value
            for alias, name in self.lists:
                many = query.getlist(alias)
                if many:
                    given[name] = many
        if self.body is not None:
            document = request.document()
            if document is None or not is_json(request.headers.get("content-type", "")):
                return None
            given[self.body] = document
        try:
            solved = self.model.model_validate(given)
        except ValidationError:
            return None
        values = dict(solved.__dict__)
        if self.services:
            services = services_of(request)
            for name, give in self.services:
                values[name] = give(services)
        if self.request_name is not None:
            values[self.request_name] = request
        if self.response_name is not None:
            values[self.response_name] = sub_response()
        return values


class _Parts:
    __slots__ = ("body", "lists", "model", "scalars", "services")

    def __init__(self) -> None:
        self.scalars: tuple[tuple[str, str], ...] = ()
        self.lists: tuple[tuple[str, str], ...] = ()
        self.body: str | None = None
        self.services: tuple[tuple[str, Callable[[Services], Any]], ...] = ()
        self.model: type[BaseModel] = _Values


def _parts(route: APIRoute) -> _Parts | None:
    dep = route.dependant
    if not allowed(dep, DEPENDANT) or not route_allowed(route):
        return None
    parts = _Parts()
    services = []
    for sub in dep.dependencies:
        give = _SERVICES.get(sub.call) if sub.call is not None else None
        if give is None or sub.name is None or not allowed(sub, SERVICE):
            return None
        services.append((sub.name, give))
    parts.services = tuple(services)
    fields: dict[str, Any] = {}
    for field in dep.path_params:
        fields[field.name] = _field(field.field_info)
    scalars: list[tuple[str, str]] = []
    lists: list[tuple[str, str]] = []
    for field in dep.query_params:
        info = field.field_info
        if field.name in fields or _is_model(info.annotation) or _is_json(info):
            return None
        (lists if _is_sequence(info.annotation) else scalars).append((field.alias, field.name))
        fields[field.name] = _field(info)
    parts.scalars, parts.lists = tuple(scalars), tuple(lists)
    if dep.body_params:
        (field,) = dep.body_params
        info = field.field_info
        if (
            isinstance(info, Form)
            or not isinstance(info, Body)
            or info.embed
            or field.name in fields
        ):
            return None
        parts.body = field.name
        fields[field.name] = _field(info)
    try:
        parts.model = create_model(f"{route.name}_values", __base__=_Values, **fields)
    except Exception:  # a parameter pydantic cannot hold in a model
        return None
    return parts


def _answers_a_response(route: APIRoute) -> bool:
    """Whether the endpoint always answers what ``RestRoute`` turns into a ``Response`` (a
    model, ``Encoded``, or a response): anything else FastAPI serializes itself, after the
    handler ran, so such a route is left to it."""
    endpoint = getattr(route.endpoint, "__wrapped__", route.endpoint)
    try:
        answer = inspect.signature(endpoint, eval_str=True).return_annotation
    except (NameError, TypeError, ValueError):
        return False
    kinds = get_args(answer) if get_origin(answer) in (Union, UnionType) else (answer,)
    return all(isinstance(k, type) and issubclass(k, _ANSWERS) for k in kinds)


def _field(info: FieldInfo) -> tuple[Any, FieldInfo]:
    """A model field checked as FastAPI checks the parameter, keyed by its name (the
    request's values are gathered by alias, then handed over by name)."""
    copy = FieldInfo.merge_field_infos(info, alias=None, validation_alias=None)
    return (info.annotation, copy)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_json(info: FieldInfo) -> bool:
    return any(type(item) is Json for item in info.metadata)


def _is_sequence(annotation: Any) -> bool:
    return bool(field_annotation_is_sequence(annotation))


class FastRoutes(Shortcut):
    """The app's first route: a /v1 request whose route is compiled is answered here.

    Which route serves a path is ``RouteTable``'s to say (app/api/rest/paths.py), as
    Starlette says it; when that route is not compiled, or none matches fully (a method no
    route of that path takes), or the path is not under /v1, the request is left to the
    routes after this one."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self.table = RouteTable(routes)
        # By the route's id: Starlette's routes compare by value and are not hashable.
        self._compiled: dict[int, Compiled] = {}
        for route in self.table.routes:
            compiled = Compiled.of(route) if isinstance(route, APIRoute) else None
            if compiled is not None:
                self._compiled[id(route)] = compiled

    @property
    def compiled(self) -> list[Compiled]:
        return list(self._compiled.values())

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or FALLBACK in scope or not scope["path"].startswith("/v1/"):
            return Match.NONE, {}
        found = self.table.match(scope)
        compiled = None if found is None else self._compiled.get(id(found[0]))
        if found is None or compiled is None:
            return Match.NONE, {}
        return Match.FULL, {**found[1], "xstreams.compiled": compiled}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        compiled: Compiled = scope["xstreams.compiled"]
        request = RestRequest(scope, receive)
        await compiled.route.admit(request)
        values = compiled.values(request)
        if values is None:
            scope[FALLBACK] = True
            await scope["router"](scope, request.replayed(), send)
            return
        call = compiled.call
        assert call is not None
        response = await answered(request, lambda: call(**values))
        await response(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)


def install(app: FastAPI) -> FastRoutes:
    """Put ``FastRoutes`` first in ``app``'s router, built from the routes installed."""
    fast = FastRoutes(app.router.routes)
    app.router.routes.insert(0, fast)
    return fast
