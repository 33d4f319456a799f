"""openapi/openapi.json: generated from the app, committed, valid, and complete for SDKs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from app.api.openapi import document
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "openapi" / "openapi.json"
# Operations of this issue's resources (the SSE routes document themselves elsewhere).
REST_TAGS = {"streams", "entries", "groups", "consumers", "pending entries", "delivery", "webhooks"}
REDIS_COMMAND = re.compile(r"\b(X[A-Z]{2,}|SCAN|DEL)\b")


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(COMMITTED.read_text())
    return loaded


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if REST_TAGS & set(op.get("tags", ()))
    ]


def test_the_committed_file_is_what_the_app_generates() -> None:
    generated = document(create_app(Settings(), store=Store()))
    assert COMMITTED.read_text() == generated, "openapi.json is stale: run `xstreams openapi`"


def test_the_cli_writes_and_checks_it(tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    cli = [sys.executable, "-m", "app.cli", "openapi"]
    subprocess.run([*cli, "--output", str(out)], check=True, cwd=ROOT, capture_output=True)
    assert out.read_text() == COMMITTED.read_text()
    assert subprocess.run([*cli, "--check"], cwd=ROOT, capture_output=True).returncode == 0
    out.write_text("{}")
    check = subprocess.run([*cli, "--check", "-o", str(out)], cwd=ROOT, capture_output=True)
    assert check.returncode == 1


def test_valid_openapi(doc: dict[str, Any]) -> None:
    validate(doc)


def test_every_operation_of_the_issue_is_there(doc: dict[str, Any]) -> None:
    ids = {op["operationId"] for _, _, op in _operations(doc)}
    assert ids == {
        "list_streams", "get_stream", "delete_stream", "append_entries", "list_entries",
        "read_streams", "get_entry", "delete_entry", "delete_entries", "trim_stream",
        "set_last_id", "list_groups", "create_group", "get_group", "set_group_id",
        "delete_group", "list_consumers", "create_consumer", "delete_consumer", "read_group",
        "ack_entries", "get_pending", "claim_entries", "autoclaim_entries",
        "ack_delete_entries", "nack_entries", "configure_stream",
        "get_policy", "set_policy", "delete_policy", "redrive_entries",
        "get_retention", "set_retention", "delete_retention",
        "list_webhooks", "get_webhook", "set_webhook", "pause_webhook", "delete_webhook",
    }  # fmt: skip


# What each operation with a post-7.0 command, or a post-7.0 option, must say about it.
LATER_COMMANDS = {
    "ack_delete_entries": ["XACKDEL", "Redis 8.2"],
    "nack_entries": ["XNACK", "Redis 8.8"],
    "delete_entry": ["XDELEX", "Redis 8.2"],
    "delete_entries": ["XDELEX", "Redis 8.2"],
    "trim_stream": ["DELREF", "Redis 8.2"],
    "append_entries": ["DELREF", "Redis 8.2", "IDMP", "Redis 8.6"],
    "configure_stream": ["XCFGSET", "Redis 8.6"],
    "read_group": ["CLAIM", "Redis 8.4"],
    "consume_group_events": ["CLAIM", "Redis 8.4"],
}


def test_operations_name_the_redis_version_a_later_command_needs(doc: dict[str, Any]) -> None:
    """A client in front of Redis 7.0 learns from the contract which operations (or options)
    need a later server: the description names the command and its version, and the info
    says what xstreams follows."""
    by_id = {op["operationId"]: op for item in doc["paths"].values() for op in item.values()}
    for operation, words in LATER_COMMANDS.items():
        text = by_id[operation]["description"]
        assert all(w in text for w in words), (operation, words)
    assert by_id["nack_entries"]["x-redis-command"] == "XNACK"
    assert by_id["ack_delete_entries"]["x-redis-command"] == "XACKDEL"
    info = doc["info"]["description"]
    assert "Redis 7.0" in info
    assert all(f"Redis {v}" in info for v in ("8.2", "8.4", "8.6", "8.8"))


def test_operation_ids_make_good_method_names(doc: dict[str, Any]) -> None:
    every = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(every) == len(set(every))
    for _, _, op in _operations(doc):
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", op["operationId"]), op["operationId"]


def test_every_operation_is_documented(doc: dict[str, Any]) -> None:
    for method, path, op in _operations(doc):
        where = f"{method.upper()} {path}"
        assert op.get("summary"), where
        assert REDIS_COMMAND.search(op.get("description", "")), f"{where} names no command"
        body = op.get("requestBody")
        if body is not None:
            assert "example" in body["content"]["application/json"], where
        for code, response in op["responses"].items():
            content = response.get("content", {})
            if int(code) >= 400:
                media = content["application/problem+json"]
                assert media["schema"] == {"$ref": "#/components/schemas/Problem"}, where
                assert media["example"]["status"] == int(code), where
            elif content:
                assert "example" in content["application/json"], f"{where} {code}"
        errors = {int(c) for c in op["responses"] if int(c) >= 400}
        assert 400 in errors, where
        if body is not None:
            assert {413, 422} <= errors, where
        if method != "get":
            assert 503 in errors, where


def test_examples_validate_against_their_schemas(doc: dict[str, Any]) -> None:
    """An example that contradicts its schema would mislead every generated SDK."""
    from jsonschema import Draft202012Validator

    def check(schema: dict[str, Any], example: Any, where: str) -> None:
        resolver_doc = {**schema, "components": doc["components"]}
        errors = list(Draft202012Validator(resolver_doc).iter_errors(example))
        assert not errors, (where, errors[0].message)

    for method, path, op in _operations(doc):
        media = op.get("requestBody", {}).get("content", {}).get("application/json")
        if media:
            check(media["schema"], media["example"], f"{method} {path} body")
        for code, response in op["responses"].items():
            for media in response.get("content", {}).values():
                if "example" in media:
                    check(media["schema"], media["example"], f"{method} {path} {code}")


def test_swagger_ui_and_the_live_document(api: httpx.Client, doc: dict[str, Any]) -> None:
    r = api.get("/docs")
    assert r.status_code == 200 and "swagger-ui" in r.text
    assert api.get("/openapi.json").json() == doc


def test_every_error_of_every_operation_is_a_problem_document(doc: dict[str, Any]) -> None:
    """Errors are answered as application/problem+json everywhere, the event streams included
    (their 404 / 429 come before any event): the contract says so, whatever the route's own
    media type."""
    seen = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for code, response in op["responses"].items():
                if int(code) >= 400:
                    assert list(response["content"]) == ["application/problem+json"], (
                        method,
                        path,
                        code,
                    )
                    seen += 1
    events = doc["paths"]["/v1/streams/{stream}/groups/{group}/consumers/{consumer}/events"]
    assert {"404", "429"} <= set(events["get"]["responses"])
    assert seen > 50


def test_request_fields_with_a_server_default_are_optional(doc: dict[str, Any]) -> None:
    """A request body's field the server fills in is neither required nor marked ``default``
    (generators such as openapi-typescript make a defaulted property required); its default is
    in the description."""
    schemas = doc["components"]["schemas"]
    append = schemas["Append"]
    assert "required" not in append
    assert "default" not in append["properties"]["nomkstream"]
    assert "Default: `false`." in append["properties"]["nomkstream"]["description"]
    assert 'Default: `"*"`.' in append["properties"]["id"]["description"]
    names = ("Append", "NewEntry", "Trim", "NewGroup", "Read", "Claim", "AutoClaim", "AckDelete")
    for name in (*names, "Nack"):
        for field, prop in schemas[name]["properties"].items():
            assert "default" not in prop, (name, field)
