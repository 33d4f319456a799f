"""Names in /v1 paths (app/api/raw_paths.py): a table of raw paths and the names they give,
and a check that no /v1 route takes a parameter the ``segment`` convertor does not decode."""

from __future__ import annotations

import pytest
from starlette.routing import Route

from app.api.binary import quote_name
from app.api.raw_paths import Segment, routed_path, segmented
from app.api.rest.paths import leaves
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

CASES = [
    # raw segment, the name it gives
    ("orders", "orders"),
    ("v1%2Fstream%2Forders", "v1/stream/orders"),
    ("v1%2fstream%2forders", "v1/stream/orders"),
    ("50%25%20off", "50% off"),
    ("a%252Fb", "a%2Fb"),  # decoded once: the name holds the three characters %2F
    ("a%25%32%46b", "a%2Fb"),  # %32%46 is "2F", after a %: still not a /
    ("50%zz", "50%zz"),  # not an escape: kept, as unquote keeps it
    ("%%34%31", "%41"),  # nor is this: the decoded 41 does not make %41 an escape
    ("%C3%A9", "é"),
    ("%FF", "\udcff"),  # a byte that is not UTF-8 (app/api/binary.py)
    ("a+b", "a+b"),  # a path is not a form: + is +
]


@pytest.mark.parametrize(("raw", "name"), CASES)
def test_a_raw_segment_gives_its_name(raw: str, name: str) -> None:
    path = routed_path(f"/v1/streams/{raw}/entries")
    parts = path.split("/")
    assert parts[:3] == ["", "v1", "streams"] and parts[4:] == ["entries"], path
    assert Segment().convert(parts[3]) == name


@pytest.mark.parametrize("name", [name for _, name in CASES])
def test_a_name_quoted_as_the_service_quotes_it_comes_back(name: str) -> None:
    (_, _, _, part) = routed_path(f"/v1/streams/{quote_name(name)}").split("/")
    assert Segment().convert(part) == name


def test_a_literal_slash_stays_a_separator() -> None:
    assert routed_path("/v1/streams/a/b%20c/entries") == "/v1/streams/a/b c/entries"


def test_segmented_leaves_typed_parameters() -> None:
    assert segmented("/v1/streams/{stream}/x/{id}") == (
        "/v1/streams/{stream:segment}/x/{id:segment}"
    )
    assert segmented("/v1/{rest:path}") == "/v1/{rest:path}"


def test_every_v1_path_parameter_is_a_decoded_segment() -> None:
    """Every REST and SSE route: a parameter another convertor reads would see ``%2F``."""
    app = create_app(Settings(), store=Store())
    routes = [r for r in leaves(app.router.routes) if r.path.startswith("/v1/")]
    assert any(r.param_convertors for r in routes)
    odd = {
        (r.path, name)
        for r in routes
        if isinstance(r, Route)
        for name, convertor in r.param_convertors.items()
        if not isinstance(convertor, Segment) and r.path != "/v1/{rest:path}"
    }
    assert odd == set()
