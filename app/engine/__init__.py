"""The stream engine: Redis 7.0 stream semantics, free of HTTP and SQL.

Imports only the standard library and sortedcontainers (checked by tests/test_layers.py).
"""
