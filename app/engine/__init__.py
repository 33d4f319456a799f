"""The stream engine: Redis 7.0 stream semantics, free of HTTP and SQL.

Imports only the standard library, sortedcontainers and orjson (a pure codec for snapshots),
checked by tests/test_layers.py.
"""
