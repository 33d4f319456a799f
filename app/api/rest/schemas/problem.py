"""RFC 9457 problem details, the body of every /v1 error.

``detail`` is a sentence for a person (app/api/problem_detail.py makes it, naming the stream,
group, consumer or parameter); ``error`` and ``code`` keep the Redis text byte for byte."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class FieldError(BaseModel):
    """One reason a request was malformed: which parameter, where it was sent, and what."""

    model_config = ConfigDict(populate_by_name=True)

    parameter: str = Field(
        description="The parameter: a query or path parameter's name (`count`), or a body "
        "member's path (`fields.qty`, `entries[0].id`); `body` for the body as a whole."
    )
    in_: Literal["body", "query", "path", "header"] = Field(
        alias="in", description="Where it was sent."
    )
    message: str = Field(description="What is wrong with it, after its name.")
    loc: list[str | int] = Field(description="pydantic's location (kept for older clients).")
    msg: str = Field(description="pydantic's message (kept for older clients).")


class Problem(BaseModel):
    """An error (``application/problem+json``), with Redis's text and code as extensions."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "about:blank",
                    "title": "Not Found",
                    "status": 404,
                    "detail": "group 'billing' does not exist on stream 'orders'",
                    "instance": "/v1/streams/orders/groups/billing/pending",
                    "code": "NOGROUP",
                    "error": "NOGROUP No such key 'orders' or consumer group 'billing'",
                    "stream": "orders",
                    "group": "billing",
                },
                {
                    "type": "about:blank",
                    "title": "Bad Request",
                    "status": 400,
                    "detail": "parameter 'count' must be a valid integer, unable to parse "
                    "string as an integer, got 'abc'",
                    "instance": "/v1/streams/orders/entries",
                    "code": "ERR",
                    "error": "ERR invalid request: query.count: Input should be a valid "
                    "integer, unable to parse string as an integer",
                    "parameter": "count",
                    "errors": [
                        {
                            "parameter": "count",
                            "in": "query",
                            "message": "must be a valid integer, unable to parse string as "
                            "an integer, got 'abc'",
                            "loc": ["query", "count"],
                            "msg": "Input should be a valid integer, unable to parse string "
                            "as an integer",
                        }
                    ],
                },
            ]
        }
    )

    type: str = Field("about:blank", description="Always `about:blank`: `title` says it all.")
    title: str = Field(description="The HTTP status phrase.")
    status: int = Field(description="The HTTP status code, repeated.")
    detail: str = Field(
        description="What went wrong, for a person: names the stream, group, consumer or "
        "parameter when known. Its wording may change; match on `code` or `error`."
    )
    instance: str | None = Field(None, description="The path of the request that failed.")
    code: str = Field(description="Redis's error code: `ERR`, `NOGROUP`, `BUSYGROUP`...")
    error: str = Field(description="The exact error text redis-server would reply.")
    stream: str | None = Field(None, description="The stream the error is about.")
    group: str | None = Field(None, description="The consumer group the error is about.")
    consumer: str | None = Field(None, description="The consumer the error is about.")
    entry: str | None = Field(None, description="The entry ID the error is about.")
    parameter: str | None = Field(
        None, description="The parameter the error is about (the first, for a malformed request)."
    )
    expected: str | None = Field(None, description="For a 415: the media type expected.")
    received: str | None = Field(
        None, description="For a 415: the media type received (absent: none was sent)."
    )
    index: int | None = Field(
        None, description="For a batch append: the position of the entry that was refused."
    )
    errors: list[FieldError] | None = Field(
        None, description="For a malformed request: every problem found, one item per field."
    )
