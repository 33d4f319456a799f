// The Durable Streams reference client (@durable-streams/client) against xstreams' /ds:
// an idempotent producer appends, then a live reader tails while another surface appends too.
// DS_URL is the stream's URL (tests/contract/test_durable_streams_client.py sets it). Prints
// one JSON line per step; the test answers the first by appending through XADD. The
// producer sends strings: it refuses objects, even on a JSON stream.
import { DurableStream, IdempotentProducer, stream } from "@durable-streams/client"

const url = process.env.DS_URL
if (!url) throw new Error("DS_URL is required")
const total = Number(process.env.DS_EXPECT ?? "8")

const handle = await DurableStream.create({ url, contentType: "application/json" })
const producer = new IdempotentProducer(handle, "client-test", {
  autoClaim: true,
  onError: (err) => {
    console.error("append failed:", err)
    process.exit(1)
  },
})
for (let n = 1; n <= 5; n++) producer.append(JSON.stringify({ n, from: "client" }))
await producer.flush()
await producer.detach()  // not close(): that would close the stream (EOF) for every writer
const { offset } = await handle.head()
console.log(JSON.stringify({ appended: 5, offset }))

const res = await stream({ url, offset: "-1", live: true })
const items = []
let last = null
await new Promise((resolve) => {
  const stop = res.subscribeJson(async (batch) => {
    items.push(...batch.items)
    last = batch.offset
    if (items.length >= total) {
      stop()
      resolve()
    }
  })
})
console.log(JSON.stringify({ tailed: items, offset: last }))
process.exit(0)
