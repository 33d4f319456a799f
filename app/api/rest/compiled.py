"""Each /v1 operation solved once at start, so a request pays only for its own values.

FastAPI finds a route by walking its routers and solves a route's parameters through its
dependency graph, per request, in Python: for a one-entry append that cost more than the
append itself (bench/profiles/rest-xadd.txt, as first committed). None of it depends on the
request.
So ``Compiled`` reads a route's parameters once: the path, query and body values it takes,
validated together by one pydantic model built from FastAPI's own field definitions (one
validator call a request, not one a field), and the services it depends on. ``FastRoutes``,
first in the app's router, finds a /v1 route among the routes of the same depth, with the
route's own pattern, and calls the endpoint.

What it cannot solve as FastAPI would, an invalid value, a body that is not JSON, a route
with a parameter kind it does not know, goes to FastAPI's routing unchanged
(``FALLBACK``), which answers as it always did: every error a request can meet here is
FastAPI's own. Solving runs no handler code, so handing over is always safe.
``tests/api/rest/test_compiled.py`` holds the two to the same values, route by route.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from types import UnionType
from typing import Any, Union, get_args, get_origin

from fastapi import FastAPI, Response
from fastapi._compat import field_annotation_is_sequence
from fastapi.dependencies.models import Dependant
from fastapi.params import Body, Form
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Json, ValidationError, create_model
from pydantic.fields import FieldInfo
from starlette.convertors import StringConvertor
from starlette.routing import BaseRoute, Match, NoMatchFound, Route
from starlette.types import Receive, Scope, Send

from app.api.rest.common import Encoded, RestRoute, answered, sub_response
from app.api.rest.fallback import in_order
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
    if (
        dep.header_params
        or dep.cookie_params
        or dep.background_tasks_param_name
        or dep.websocket_param_name
        or dep.http_connection_param_name
        or dep.security_scopes_param_name
        or len(dep.body_params) > 1
    ):
        return None
    parts = _Parts()
    services = []
    for sub in dep.dependencies:
        give = _SERVICES.get(sub.call) if sub.call is not None else None
        if give is None or sub.name is None or _takes_anything(sub):
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
            or getattr(route, "_embed_body_fields", False)
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


def _takes_anything(sub: Dependant) -> bool:
    return bool(
        sub.path_params
        or sub.query_params
        or sub.header_params
        or sub.cookie_params
        or sub.body_params
        or sub.dependencies
    )


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_json(info: FieldInfo) -> bool:
    return any(type(item) is Json for item in info.metadata)


def _is_sequence(annotation: Any) -> bool:
    return bool(field_annotation_is_sequence(annotation))


class FastRoutes(BaseRoute):
    """The app's first route: a /v1 request whose route is compiled is answered here.

    Which route a path reaches is decided as Starlette decides it, in the app's order, by
    each route's own ``matches``; only routes that can match a path of that depth are asked.
    A path whose first full match is not a compiled route, one that matches only partly (a
    method no route of that path takes), or anything but a /v1 path, is left to the routes
    after this one."""

    def __init__(self, routes: Iterable[BaseRoute]) -> None:
        self._by_depth: dict[int, list[tuple[BaseRoute, Compiled | None]]] = {}
        anywhere: list[tuple[int, BaseRoute]] = []  # routes of no fixed depth, by position
        fixed: list[tuple[int, int, BaseRoute, Compiled | None]] = []
        for position, route in enumerate(routes):
            depth = _depth(route)
            if depth is None:
                anywhere.append((position, route))
            else:
                compiled = Compiled.of(route) if isinstance(route, APIRoute) else None
                fixed.append((position, depth, route, compiled))
        for depth in {d for _, d, _, _ in fixed}:
            rows = [(p, r, c) for p, d, r, c in fixed if d == depth]
            rows += [(p, r, None) for p, r in anywhere]
            self._by_depth[depth] = [(r, c) for _, r, c in sorted(rows, key=lambda x: x[0])]
        self._anywhere = [(r, None) for _, r in anywhere]

    @property
    def compiled(self) -> list[Compiled]:
        return [c for rows in self._by_depth.values() for _, c in rows if c is not None]

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or FALLBACK in scope:
            return Match.NONE, {}
        path: str = scope["path"]
        if not path.startswith("/v1/"):
            return Match.NONE, {}
        for route, compiled in self._by_depth.get(path.count("/"), self._anywhere):
            match, child = route.matches(scope)
            if match is Match.FULL:  # the route Starlette would take (a partial one waits)
                if compiled is None:
                    break
                return Match.FULL, {**child, "xstreams.compiled": compiled}
        return Match.NONE, {}

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


def _depth(route: BaseRoute) -> int | None:
    """How many ``/`` a path this route matches holds, when that is fixed: every parameter
    a plain one (one segment); None for a mount or a parameter that spans segments."""
    if not isinstance(route, Route):
        return None
    if not all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
        return None
    return route.path.count("/")


def install(app: FastAPI) -> FastRoutes:
    """Put ``FastRoutes`` first in ``app``'s router, built from the routes installed."""
    fast = FastRoutes(list(in_order(app.router.routes)))
    app.router.routes.insert(0, fast)
    return fast
