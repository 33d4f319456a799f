"""REST's ``answered`` (app/api/rest/common.py) against a fake of the lifecycle role."""

from __future__ import annotations

from types import SimpleNamespace

from starlette.requests import Request
from starlette.responses import Response

from app.api.rest.common import answered
from app.engine.waiting import ClientGone
from tests.support.fakes import PlainLifecycle


def request_to(backend: PlainLifecycle) -> Request:
    services = SimpleNamespace(backend=backend)
    app = SimpleNamespace(state=SimpleNamespace(services=services))
    return Request({"type": "http", "method": "POST", "path": "/", "headers": [], "app": app})


async def test_the_response_is_built_inside_the_answering_block() -> None:
    fake = PlainLifecycle()
    seen: list[bool] = []

    async def call() -> Response:
        seen.append(fake.inside)
        return Response(status_code=201)

    r = await answered(request_to(fake), call)
    assert r.status_code == 201
    assert seen == [True] and fake.blocks == 1 and not fake.inside


async def test_a_client_gone_while_the_answer_waits_is_a_499() -> None:
    fake = PlainLifecycle(fail_on_exit=ClientGone())

    async def call() -> Response:
        return Response(status_code=200)

    r = await answered(request_to(fake), call)
    assert r.status_code == 499
