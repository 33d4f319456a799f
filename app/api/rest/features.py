"""What a compiled route may use of FastAPI: every feature named, with the values allowed.

``Compiled`` (app/api/rest/compiled.py) solves a route's parameters itself, so anything
FastAPI does for a route that it does not do would be dropped without a word. Hence an allow
list, not a deny list: every field of FastAPI's ``Dependant`` (a route's solved parameters)
and every setting FastAPI's request handler takes (``get_request_handler``'s parameters) is
named here with the values a compiled route may hold. A route is compiled only when all of
its features pass; a field or setting a later FastAPI adds is not named, so every route
falls back to FastAPI's own solving until someone decides here.
tests/api/rest/test_fastapi_contract.py holds these lists to the FastAPI installed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.sse import EventSourceResponse

__all__ = ["DEPENDANT", "ROUTE", "SERVICE", "allowed", "route_allowed"]

Check = Callable[[Any], bool]


def _any(value: Any) -> bool:
    return True


def _empty(value: Any) -> bool:
    return not value


def _unset(value: Any) -> bool:
    return value is None or isinstance(value, DefaultPlaceholder)


def _strict(value: Any) -> bool:
    """A JSON body only under a JSON media type, as ``is_json`` decides (FastAPI's default)."""
    return (value.value if isinstance(value, DefaultPlaceholder) else value) is True


def _not_event_stream(value: Any) -> bool:
    """FastAPI streams an endpoint's items itself for an ``EventSourceResponse`` route."""
    kind = value.value if isinstance(value, DefaultPlaceholder) else value
    return not (isinstance(kind, type) and issubclass(kind, EventSourceResponse))


# Every field of ``Dependant`` for the route itself.
DEPENDANT: dict[str, Check] = {
    "path_params": _any,  # each checked by the route's model
    "query_params": _any,  # each checked in ``_parts``
    "header_params": _empty,
    "cookie_params": _empty,
    "body_params": lambda params: len(params) <= 1,  # and that one checked in ``_parts``
    "dependencies": _any,  # each checked against ``SERVICE``
    "name": _any,
    "call": lambda call: call is not None,
    "request_param_name": _any,  # given the request
    "websocket_param_name": _unset,
    "http_connection_param_name": _unset,
    "response_param_name": _any,  # given a sub-response, merged as FastAPI merges it
    "background_tasks_param_name": _unset,
    "security_scopes_param_name": _unset,
    "own_oauth_scopes": _empty,
    "parent_oauth_scopes": _empty,
    "use_cache": _any,  # its services are the app's, the same whether cached or not
    "path": _any,
    # A yield dependency's lifetime: the endpoint and the services (plain functions, named in
    # ``compiled._SERVICES``) are no such dependency.
    "scope": _any,
    "concurrency": _unset,  # a limit on a dependency's threads
}

# A dependency a compiled route takes: one of its known services, which takes nothing itself.
SERVICE: dict[str, Check] = {
    **DEPENDANT,
    "path_params": _empty,
    "query_params": _empty,
    "body_params": _empty,
    "dependencies": _empty,
    "request_param_name": _any,  # a service is found through the request
    "response_param_name": _unset,
}

# Every parameter of FastAPI's ``get_request_handler`` (how the route answers a request), as
# the route attribute ``APIRoute.get_route_handler`` passes for it, with the values allowed;
# ``max_body_size`` besides, which FastAPI applies around the handler.
ROUTE: dict[str, tuple[str, Check]] = {
    "dependant": ("dependant", _any),  # checked against ``DEPENDANT``
    "body_field": ("body_field", _any),  # the body parameter, checked in ``_parts``
    # The endpoint answers a ``Response`` (``_answers_a_response``), which FastAPI sends as
    # it is: no status, class or model of the route's applies to it.
    "status_code": ("status_code", _any),
    "response_class": ("response_class", _not_event_stream),
    "response_field": ("response_field", _any),
    "response_model_include": ("response_model_include", _any),
    "response_model_exclude": ("response_model_exclude", _any),
    "response_model_by_alias": ("response_model_by_alias", _any),
    "response_model_exclude_unset": ("response_model_exclude_unset", _any),
    "response_model_exclude_defaults": ("response_model_exclude_defaults", _any),
    "response_model_exclude_none": ("response_model_exclude_none", _any),
    # Overrides are looked for per request (``Compiled.values``): FastAPI's to apply.
    "dependency_overrides_provider": ("dependency_overrides_provider", _any),
    "embed_body_fields": ("_embed_body_fields", _empty),
    "strict_content_type": ("strict_content_type", _strict),
    "form_limits": ("form_limits", _any),  # a form body is never compiled
    "stream_item_field": ("stream_item_field", _unset),
    "is_json_stream": ("is_json_stream", _empty),
    "max_body_size": ("max_body_size", _unset),
}


def allowed(dependant: Dependant, allow: dict[str, Check]) -> bool:
    """Whether every field of ``dependant`` is on ``allow`` with a value it allows."""
    for field in dataclasses.fields(dependant):
        check = allow.get(field.name)
        if check is None or not check(getattr(dependant, field.name)):
            return False
    return True


def route_allowed(route: APIRoute) -> bool:
    """Whether every setting of ``route`` that changes how FastAPI answers is allowed."""
    for attribute, check in ROUTE.values():
        if not hasattr(route, attribute) or not check(getattr(route, attribute)):
            return False
    return True
