"""The base of every request body: strict types, unknown members refused, text Redis can store.

JSON can spell a lone UTF-16 surrogate (``"\\ud800"``), which is no Unicode text: no byte
string for Redis to keep. It is refused here (422) rather than deep in the engine.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


def _check_text(value: Any) -> None:
    if isinstance(value, str):
        value.encode()  # UnicodeEncodeError is a ValueError: pydantic reports it
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(k)
            _check_text(v)
    elif isinstance(value, list):
        for v in value:
            _check_text(v)


class Body(BaseModel):
    """Strict: JSON `false` is no integer and `1` no string, as the document says."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _text_only(cls, data: Any) -> Any:
        try:
            _check_text(data)
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (no lone surrogates)") from None
        return data
