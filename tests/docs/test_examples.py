"""Every sh, bash and python example of README.md and docs/ runs against a live service.

One test per page: a service of its own (tests/conftest.py ``Server``, with the flags of the
page's ``<!-- example: server ... -->`` marker), then the page's blocks in document order.
The rules are in tests/docs/examples.py and docs/contributing-docs.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import redis

from tests.conftest import (
    REDIS_DB,
    REDIS_HOST,
    REDIS_PORT,
    REQUIRE_SERVICES,
    Server,
)
from tests.docs.examples import (
    SERVICES,
    ExampleFailed,
    PageError,
    pages,
    parse_page,
    run_page,
)
from tests.support.waiting import until

ROOT = Path(__file__).resolve().parents[2]
# In a page's server marker, the Redis database its service may use.
REDIS_URL_VAR = "$XSTREAMS_DOCS_REDIS_URL"
PAGES = list(pages(ROOT))

pytestmark = pytest.mark.server


def start_server(data_dir: Path, flags: list[str]) -> tuple[str, Callable[[], None]]:
    """A live ``xstreams serve`` for one page."""
    if any(REDIS_URL_VAR in flag for flag in flags):
        # A page about the Redis backend: its service keeps its keyspace in the tests
        # database, emptied first (that database only; nothing else on the server).
        if not SERVICES["redis"]():
            if REQUIRE_SERVICES:
                pytest.fail("this page's service needs redis-server on 127.0.0.1:6379")
            pytest.skip("this page's service needs redis-server on 127.0.0.1:6379")
        redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=REDIS_DB).flushdb()
        url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}"
        flags = [flag.replace(REDIS_URL_VAR, url) for flag in flags]
    server = Server(data_dir, *flags)
    # Server waits for /healthz; a page's reader waits for the service to be ready.
    until(lambda: httpx.get(server.url + "/readyz").status_code == 200, what="/readyz 200")
    return server.url, server.stop


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(path: Path, tmp_path: Path) -> None:
    run_page(parse_page(path), start_server, tmp_path)


def test_a_failing_example_fails_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Read a stream that is not there:\n\n```sh\ncurl http://127.0.0.1:8000/v1/streams/nope\n```\n"
    )
    with pytest.raises(ExampleFailed, match="nope") as failed:
        run_page(parse_page(page), start_server, tmp_path)
    assert "404" in str(failed.value) or "No such" in str(failed.value)


def test_an_example_marked_fails_must_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- example: fails -->\n```sh\ncurl http://127.0.0.1:8000/v1/streams/nope\n```\n\n"
        "<!-- example: fails -->\n```python\nprint('fine')\n```\n"
    )
    with pytest.raises(ExampleFailed, match="should fail") as failed:
        run_page(parse_page(page), start_server, tmp_path)
    assert "print('fine')" in str(failed.value)


def test_a_not_run_example_needs_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- example: not-run -->\n```sh\nmake serve\n```\n")
    with pytest.raises(PageError, match="needs a reason"):
        parse_page(page)
    page.write_text("<!-- example: not-run () -->\n```sh\nmake serve\n```\n")
    with pytest.raises(PageError, match="needs a reason"):
        parse_page(page)


def test_blocks_of_a_page_share_a_folder_and_see_the_service(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\ncurl -X POST http://127.0.0.1:8000/ "
        '-d \'["XADD","s","*","f","v"]\' > out.json\n```\n\n'
        "```python\nimport json, os\nassert json.load(open('out.json'))['result']\n"
        "assert os.environ['XSTREAMS_URL'].startswith('http://127.0.0.1:')\n```\n"
    )
    assert run_page(parse_page(page), start_server, tmp_path) == 2


def test_a_needs_marker_names_a_known_service(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- example: needs kafka -->\n```sh\ntrue\n```\n")
    with pytest.raises(PageError, match="needs"):
        parse_page(page)


def test_a_block_that_never_ends_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tests.docs.examples.BLOCK_TIMEOUT_S", 1)
    page = tmp_path / "page.md"
    page.write_text("```sh\nsleep 30 &\nwait\n```\n")
    with pytest.raises(ExampleFailed, match="timed out after 1 s"):
        run_page(parse_page(page), start_server, tmp_path)
