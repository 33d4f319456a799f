"""RFC 9457 problem details, the body of every /v1 error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FieldError(BaseModel):
    """One reason a request was malformed: where (``loc``) and what."""

    loc: list[str | int]
    msg: str


class Problem(BaseModel):
    """An error (``application/problem+json``), with Redis's text and code as extensions."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "about:blank",
                    "title": "Not Found",
                    "status": 404,
                    "detail": "NOGROUP No such key 'orders' or consumer group 'billing'",
                    "instance": "/v1/streams/orders/groups/billing/pending",
                    "code": "NOGROUP",
                    "error": "NOGROUP No such key 'orders' or consumer group 'billing'",
                }
            ]
        }
    )

    type: str = Field("about:blank", description="Always `about:blank`: `title` says it all.")
    title: str = Field(description="The HTTP status phrase.")
    status: int = Field(description="The HTTP status code, repeated.")
    detail: str = Field(description="What went wrong (the Redis error text when there is one).")
    instance: str | None = Field(None, description="The path of the request that failed.")
    code: str = Field(description="Redis's error code: `ERR`, `NOGROUP`, `BUSYGROUP`...")
    error: str = Field(description="The exact error text redis-server would reply.")
    index: int | None = Field(
        None, description="For a batch append: the position of the entry that was refused."
    )
    errors: list[FieldError] | None = Field(
        None, description="For a malformed request: every problem found."
    )
