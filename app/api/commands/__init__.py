"""The command endpoint: Upstash's Redis-over-HTTP protocol (`/`, `/pipeline`, `/multi-exec`)."""
