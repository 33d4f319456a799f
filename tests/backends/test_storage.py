"""What a prefix's streams hold, on both backends (``KeyspaceRole.storage``): the count a
storage quota is held to (app/api/quotas.py)."""

from __future__ import annotations

from typing import cast

import pytest

from app.backends.roles import KeyspaceRole, StreamsRole
from app.engine.commands.streams import XAddArgs
from app.engine.replies import Storage

pytestmark = pytest.mark.redis


async def test_a_prefix_counts_its_streams_entries_and_bytes(streams: StreamsRole) -> None:
    keyspace = cast(KeyspaceRole, streams)  # both backends play every role
    assert await keyspace.storage("{t}a:") == Storage()
    for name, n in (("{t}a:one", 3), ("{t}a:two", 5), ("{t}b:one", 7), ("{t}a*", 2)):
        await streams.append([XAddArgs(name, ("f", "v" * 100)) for _ in range(n)])
    a = await keyspace.storage("{t}a:")
    assert (a.streams, a.entries) == (2, 8)
    assert a.bytes >= 8 * 100  # the values at least
    star = await keyspace.storage("{t}a*")  # a glob character is a name's, not a pattern's
    assert (star.streams, star.entries) == (1, 2)
    everything = await keyspace.storage("")
    assert (everything.streams, everything.entries) == (4, 17)
    await streams.append(
        [XAddArgs("{t}a:two", ("f", "v" * 5000))]
    )  # past a node: Redis sizes by allocation
    more = await keyspace.storage("{t}a:")
    assert more.entries == 9 and more.bytes > a.bytes
