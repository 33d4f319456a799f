"""xstreams: Redis 7.0 stream semantics served over HTTP."""
