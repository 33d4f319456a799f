"""xstreams: Redis 7.0 stream semantics served over HTTP."""

# The one place the version is written: the package metadata (pyproject's dynamic version),
# the OpenAPI document and `xstreams --version` read it from here.
__version__ = "0.1.0"
