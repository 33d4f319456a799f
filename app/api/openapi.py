"""The OpenAPI document: FastAPI's, finished for SDK generators.

FastAPI describes every response as ``application/json`` (an event stream's errors as
``text/event-stream``, its response class); errors here are ``application/problem+json``, so
their content is moved. A default on a property of a request body's schema is written in its
description instead of as ``default``: generators with their default options
(openapi-typescript's ``defaultNonNullable``) take a property with a default for one the
server always sends, which holds for responses but made every defaulted request field
required. Request and response examples live once, on the schemas (``json_schema_extra``);
they are copied onto each operation's media types, where generators and Swagger UI look for
them. openapi/openapi.json is this document, written by ``xstreams openapi``; a test fails
when the two differ.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from app.api.errors import PROBLEM_JSON
from app.api.services import app_services

_UNUSED = ("HTTPValidationError", "ValidationError")


def _schema_example(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """The first example of a schema, following ``$ref`` and the first ``anyOf`` branch."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = doc["components"]["schemas"][name]
    if "anyOf" in schema:
        return _schema_example(doc, schema["anyOf"][0])
    examples = schema.get("examples")
    return examples[0] if examples else None


def _summary(doc: dict[str, Any], schema: dict[str, Any]) -> str:
    """A response's description: the first line of its schema's docstring."""
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    text = schema.get("description") or "Successful Response"
    return str(text).split("\n", 1)[0]


def _problem_example(doc: dict[str, Any], status: int, path: str) -> dict[str, Any]:
    example = dict(_schema_example(doc, {"$ref": "#/components/schemas/Problem"}))
    text = {
        400: "ERR Invalid stream ID specified as stream command argument",
        401: "Unauthorized",
        404: "ERR no such key",
        409: "BUSYGROUP Consumer Group name already exists",
        413: "ERR request body larger than 16777216 bytes",
        422: "ERR invalid request: body.fields: Field required",
    }.get(status, "ERR " + HTTPStatus(status).phrase.lower())
    example.update(
        title=HTTPStatus(status).phrase,
        status=status,
        detail=text,
        error=text,
        code=text.split(" ", 1)[0],
        instance=path,
    )
    return example


def _refs(doc: dict[str, Any], node: Any, into: set[str]) -> set[str]:
    """Every component schema ``node`` reaches through ``$ref``, transitively."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[-1]
            if name not in into:
                into.add(name)
                _refs(doc, doc["components"]["schemas"][name], into)
        for value in node.values():
            _refs(doc, value, into)
    elif isinstance(node, list):
        for value in node:
            _refs(doc, value, into)
    return into


def _defaults_described(doc: dict[str, Any]) -> None:
    """In schemas only request bodies use, each property's ``default`` goes into its
    description (``Default: `false`.``): the server fills it in, the client may leave it out."""
    requests: set[str] = set()
    responses: set[str] = set()
    for item in doc["paths"].values():
        for op in item.values():
            _refs(doc, op.get("requestBody", {}), requests)
            _refs(doc, op.get("responses", {}), responses)
    schemas = doc["components"]["schemas"]
    for name in sorted(requests - responses):
        for prop in schemas[name].get("properties", {}).values():
            if "default" in prop:
                default = json.dumps(prop.pop("default"), ensure_ascii=False)
                text = prop.get("description", "").rstrip()
                prop["description"] = f"{text} Default: `{default}`.".lstrip()


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes a retry of this write safe: the first request with the key runs and"
    " its response is kept (per credential, for XSTREAMS_IDEMPOTENCY_WINDOW_S); a retry with"
    " the same key and the same request gets that response again, with"
    " `Idempotent-Replayed: true`, and changes nothing. The same key with another request"
    " is 422; while the first still runs, 409. 1 to 255 printable ASCII characters (a"
    " quoted structured-field string is taken without its quotes).",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
}
_IDEMPOTENCY_ERRORS = {
    "400": "A bad argument, or an Idempotency-Key that is not 1 to 255 printable characters.",
    "409": "A conflict with the stream's state, or the first request with this"
    " Idempotency-Key is still running (`Retry-After`).",
    "422": "The Idempotency-Key was used for a different request.",
}
_WRITES = ("post", "put", "patch", "delete")


def _idempotency(doc: dict[str, Any], path: str, method: str, op: dict[str, Any]) -> None:
    """Every write takes Idempotency-Key (app/api/idempotency.py), with its errors."""
    if method not in _WRITES:
        return
    op.setdefault("parameters", []).append({"$ref": "#/components/parameters/IdempotencyKey"})
    responses = op.setdefault("responses", {})
    for code, why in _IDEMPOTENCY_ERRORS.items():
        if code not in responses:
            media = {
                "schema": {"$ref": "#/components/schemas/Problem"},
                "example": _problem_example(doc, int(code), path),
            }
            responses[code] = {"description": why, "content": {PROBLEM_JSON: media}}


def _finish(doc: dict[str, Any], cookie: str | None) -> dict[str, Any]:
    _defaults_described(doc)
    for path, item in doc["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None and "example" not in body:
                example = _schema_example(doc, body["schema"])
                if example is not None:
                    body["example"] = example
            responses = op.get("responses", {})
            if "HTTPValidationError" in str(responses.get("422", "")):
                del responses["422"]  # FastAPI's default; 400 documents malformed parameters
            for code, response in responses.items():
                content = response.get("content", {})
                if int(code) >= 400 and content:
                    # Whatever FastAPI wrote (JSON, an event stream's media type): a problem.
                    media = {"schema": {"$ref": "#/components/schemas/Problem"}}
                    content.clear()
                    media["example"] = _problem_example(doc, int(code), path)
                    content[PROBLEM_JSON] = media
                elif "application/json" in content:
                    media = content["application/json"]
                    example = _schema_example(doc, media.get("schema", {}))
                    if example is not None:
                        media.setdefault("example", example)
                    if response.get("description") == "Successful Response":
                        response["description"] = _summary(doc, media.get("schema", {}))
                elif code == "204" and response.get("description") == "Successful Response":
                    response["description"] = "Done: nothing to return."
            _idempotency(doc, path, method, op)
    doc.setdefault("components", {}).setdefault("parameters", {})["IdempotencyKey"] = (
        IDEMPOTENCY_KEY
    )
    # Credentials (docs/operations/access.md): a bearer header anywhere; for EventSource,
    # which cannot send headers, a query parameter or the cookie (reads, unless the page is
    # trusted). No credential at all works only on a service with none configured.
    doc.setdefault("components", {})["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`xs_...`), a JWT your application minted, or the"
            " admin token.",
        },
        "accessToken": {
            "type": "apiKey",
            "in": "query",
            "name": "access_token",
            "description": "The same credential as a query parameter, for EventSource (never"
            " logged).",
        },
        "cookie": {
            "type": "apiKey",
            "in": "cookie",
            "name": cookie or "xstreams_token",
            "description": "The same credential in an HttpOnly cookie (XSTREAMS_AUTH_COOKIE);"
            " read for GET requests only, and never for a command that writes (the group event"
            " stream) unless the page is of this origin or on the CORS list.",
        },
    }
    doc["security"] = [{}, {"bearer": []}, {"accessToken": []}, {"cookie": []}]
    schemas = doc.get("components", {}).get("schemas", {})
    for name in _UNUSED:
        schemas.pop(name, None)
    return doc


def document(app: FastAPI) -> str:
    """The document as committed in openapi/openapi.json (stable key order, final newline)."""
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"


def install(app: FastAPI) -> None:
    """Serve the finished document at /openapi.json (and to Swagger UI at /docs)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _finish(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    summary=app.summary,
                    description=app.description,
                    routes=app.routes,
                    tags=app.openapi_tags,
                ),
                app_services(app).settings.auth_cookie,
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
