"""The ``xstreams`` command-line client: a service's streams over HTTP, for people and scripts.

It reaches the service only through its public HTTP API (REST and Server-Sent Events), like any
other client, so it imports nothing of the server (tests/test_layers.py checks it)."""
