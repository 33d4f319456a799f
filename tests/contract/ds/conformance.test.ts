// The public Durable Streams conformance suite against xstreams' /ds surface.
// DS_BASE_URL is the surface's base, e.g. http://127.0.0.1:8000/ds (tests/contract/test_durable_streams.py sets it).
import { runConformanceTests } from "@durable-streams/server-conformance-tests"

const baseUrl = process.env.DS_BASE_URL
if (!baseUrl) throw new Error("DS_BASE_URL is required (e.g. http://127.0.0.1:8000/ds)")

runConformanceTests({ baseUrl, longPollTimeoutMs: 20_000 })
