"""tests/contract's collection: the Durable Streams conformance run (test_durable_streams.py)
is collected only with XSTREAMS_DS_CONFORMANCE=1 while the /ds surface is incomplete (issue
41): it takes minutes and does not pass whole yet."""

from __future__ import annotations

import os

ENABLED = os.environ.get("XSTREAMS_DS_CONFORMANCE") == "1"
collect_ignore = [] if ENABLED else ["test_durable_streams.py"]
