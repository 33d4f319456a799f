// One stream scenario through @upstash/redis, run on xstreams and on a reference, printed as
// JSON for tests/sdk/test_upstash_js_sdk.py to compare.
//
//   node scenario.mjs <xstreams-url> <redis-port>
//
// xstreams: the stock client, `new Redis({url, token})`, over HTTP (base64 replies, the
// sync-token and telemetry headers), in its two request shapes: auto-pipelining (the
// default: most calls go out through /pipeline) and one request a call (`/`).
// reference: the same SDK (same argument building, same result parsing) whose requester sends
// each command to redis-server over RESP. A JSON number goes to it as JavaScript writes it and
// a boolean as `true` / `false`, the text xstreams stores for them. An error reply to a lone
// command is thrown as the SDK's HTTP client throws Upstash's HTTP 400 answer.

import net from "node:net";
import { Redis, errors } from "@upstash/redis";

const [url, redisPort] = process.argv.slice(2);
// The server runs without a token; the SDK insists on one and the server ignores it.
const TOKEN = "any-token";

// ------------------------------------------------------------------ RESP reference

class Resp {
  constructor(port) {
    this.port = port;
    this.buffer = Buffer.alloc(0);
    this.waiting = [];
  }

  async connect() {
    this.socket = net.createConnection({ host: "127.0.0.1", port: this.port });
    await new Promise((resolve, reject) => {
      this.socket.once("connect", resolve);
      this.socket.once("error", reject);
    });
    this.socket.on("data", (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
  }

  close() {
    this.socket.end();
  }

  call(args) {
    const parts = [`*${args.length}\r\n`];
    for (const a of args) {
      const text = Buffer.from(String(a), "utf8");
      parts.push(`$${text.length}\r\n`, text, "\r\n");
    }
    this.socket.write(Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p)))));
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  drain() {
    while (this.waiting.length > 0) {
      const parsed = this.parse(0);
      if (parsed === undefined) return;
      this.buffer = this.buffer.subarray(parsed.end);
      this.waiting.shift()(parsed.value);
    }
  }

  // {value, end} of the reply at `at`, or undefined while it is incomplete. An error reply
  // is {error: text}.
  parse(at) {
    const eol = this.buffer.indexOf("\r\n", at);
    if (eol < 0) return undefined;
    const kind = String.fromCharCode(this.buffer[at]);
    const line = this.buffer.toString("utf8", at + 1, eol);
    const next = eol + 2;
    switch (kind) {
      case "+":
        return { value: line, end: next };
      case "-":
        return { value: { error: line }, end: next };
      case ":":
        return { value: Number(line), end: next };
      case "$": {
        const size = Number(line);
        if (size < 0) return { value: null, end: next };
        if (this.buffer.length < next + size + 2) return undefined;
        return { value: this.buffer.toString("utf8", next, next + size), end: next + size + 2 };
      }
      case "*": {
        const count = Number(line);
        if (count < 0) return { value: null, end: next };
        const items = [];
        let end = next;
        for (let i = 0; i < count; i++) {
          const item = this.parse(end);
          if (item === undefined) return undefined;
          items.push(item.value);
          end = item.end;
        }
        return { value: items, end };
      }
      default:
        throw new Error(`unexpected RESP reply ${JSON.stringify(line)}`);
    }
  }
}

const asText = (a) => (typeof a === "boolean" ? (a ? "true" : "false") : String(a));

function isError(reply) {
  return reply !== null && typeof reply === "object" && !Array.isArray(reply) && "error" in reply;
}

// A requester (what `new Redis(requester)` takes) in front of redis-server. `sent` keeps the
// commands in the order they went out, for the test's reports; `counts.pipelined` counts
// those that came in a /pipeline request.
function referenceRequester(resp, sent, counts) {
  return {
    async request(req) {
      if (req.path?.[0] === "pipeline") {
        const out = [];
        counts.pipelined += req.body.length;
        for (const command of req.body) {
          sent.push(command);
          const reply = await resp.call(command.map(asText));
          out.push(isError(reply) ? { error: reply.error } : { result: reply });
        }
        return out;
      }
      if (req.path !== undefined && req.path.length > 0) {
        throw new Error(`the reference serves no path ${req.path.join("/")}`);
      }
      sent.push(req.body);
      const reply = await resp.call(req.body.map(asText));
      if (isError(reply)) {
        throw new errors.UpstashError(`${reply.error}, command was: ${JSON.stringify(req.body)}`);
      }
      return { result: reply };
    },
  };
}

// ------------------------------------------------------------------------ scenario

// Each step: [name, async (redis, batch) => result]. IDs are explicit so both sides hold the
// same entries; the one `*` ID is masked by the test. `batch(calls)` makes the calls in one
// tick when the client auto-pipelines (they go out as one /pipeline, in order), else one
// after the other: separate requests in flight together may be served in any order.
const STEPS = [
  // XADD with an object of fields: numbers and booleans go out as JSON numbers and
  // booleans, objects and null as their JSON text; XRANGE parses every value back as JSON.
  [
    "xadd typed values",
    (r) =>
      r.xadd("v", "1-0", {
        f: "v",
        n: 1,
        neg: -7,
        pi: 3.14,
        big: 12345678901234567890,
        tiny: 1e-7,
        done: true,
        failed: false,
        nothing: null,
        obj: { a: [1, "x"] },
        text: "héllo ✓",
        numtext: "007",
      }),
  ],
  ["xrange typed values", (r) => r.xrange("v", "-", "+")],
  ["xadd plain", (r) => r.xadd("s", "1-0", { f: "v" })],
  [
    "xadd exact maxlen",
    (r) =>
      r.xadd("s", "2-0", { f: "w" }, { trim: { type: "MAXLEN", comparison: "=", threshold: 10 } }),
  ],
  [
    "xadd four at once",
    (r, batch) => batch([3, 4, 5, 6].map((i) => () => r.xadd("s", `${i}-0`, { f: `v${i}` }))),
  ],
  ["xadd auto id", (r) => r.xadd("t", "*", { k: "v" })],
  ["xadd nomkstream", (r) => r.xadd("missing", "1-0", { k: "v" }, { nomkStream: true })],
  ["xadd id too small", (r) => r.xadd("s", "6-0", { f: "again" })],
  ["xlen", (r) => r.xlen("s")],
  ["xrange count", (r) => r.xrange("s", "(1-0", "+", 2)],
  ["xgroup create g", (r) => r.xgroup("s", { type: "CREATE", group: "g", id: "0" })],
  ["xgroup create h", (r) => r.xgroup("s", { type: "CREATE", group: "h", id: "0" })],
  ["xgroup create again", (r) => r.xgroup("s", { type: "CREATE", group: "g", id: "$" })],
  ["xgroup create mkstream", (r) =>
    r.xgroup("u", { type: "CREATE", group: "g", id: "$", options: { MKSTREAM: true } })],
  ["xreadgroup g", (r) => r.xreadgroup("g", "c", "s", ">", { count: 4 })],
  ["xreadgroup h", (r) => r.xreadgroup("h", "d", "s", ">", { count: 2 })],
  ["xreadgroup history", (r) => r.xreadgroup("g", "c", "s", "0")],
  ["xreadgroup two streams", (r) => r.xreadgroup("g", "c", ["s", "u"], ["2-0", ">"])],
  ["xreadgroup no group", (r) => r.xreadgroup("nope", "c", "s", ">")],
  ["xpending g", (r) => r.xpending("s", "g", "-", "+", 10)],
  ["xpending h of d", (r) => r.xpending("s", "h", "-", "+", 10, { consumer: "d" })],
  ["xack one", (r) => r.xack("s", "h", "1-0")],
  ["xack several", (r) => r.xack("s", "h", ["1-0", "2-0", "9-0"])],
  ["xack re-read h", (r) => r.xreadgroup("h", "d", "s", ">", { count: 2 })],
  ["xpending h", (r) => r.xpending("s", "h", "-", "+", 10)],
  // Now g has 1..4 pending (last delivered 4), h has 3..4 pending (last delivered 4).
  // XACKDEL: the SDK's xackdel requires an option, so the option-less form goes through
  // the SDK's raw `exec`.
  ["xackdel no option", (r) => r.exec(["XACKDEL", "s", "g", "IDS", "1", "1-0"])],
  ["xackdel KEEPREF", (r) => r.xackdel("s", "g", "KEEPREF", "2-0", "9-0")],
  ["xackdel ACKED referenced", (r) => r.xackdel("s", "g", "ACKED", "3-0")],
  ["xackdel acked lower case", (r) => r.xackdel("s", "h", "acked", "3-0")],
  ["xackdel DELREF", (r) => r.xackdel("s", "g", "DELREF", "4-0")],
  ["xackdel not pending", (r) => r.xackdel("s", "h", "KEEPREF", "4-0", "5-0")],
  ["xackdel no group", (r) => r.xackdel("s", "nope", "ACKED", "5-0")],
  ["xackdel missing key", (r) => r.xackdel("missing", "g", "KEEPREF", "1-0")],
  ["xackdel bad id", (r) => r.xackdel("s", "g", "KEEPREF", "5-0", "bad")],
  ["xpending g after xackdel", (r) => r.xpending("s", "g", "-", "+", 10)],
  ["xpending h after xackdel", (r) => r.xpending("s", "h", "-", "+", 10)],
  ["xrange after xackdel", (r) => r.xrange("s", "-", "+")],
  // Left: 5-0 and 6-0, delivered to neither group.
  ["xreadgroup g 5", (r) => r.xreadgroup("g", "c", "s", ">", { count: 1 })],
  ["xdelex ACKED", (r) => r.xdelex("s", "ACKED", "5-0", "6-0")],
  ["xack g 5", (r) => r.xack("s", "g", "5-0")],
  ["xdelex no option", (r) => r.xdelex("s", undefined, "9-0")],
  ["xdelex KEEPREF", (r) => r.xdelex("s", "keepref", "6-0", "9-0")],
  [
    "xadd 7 8",
    (r, batch) => batch([() => r.xadd("s", "7-0", { f: 7 }), () => r.xadd("s", "8-0", { f: 8 })]),
  ],
  ["xreadgroup h 5..8", (r) => r.xreadgroup("h", "d", "s", ">")],
  ["xdelex DELREF", (r) => r.xdelex("s", "DELREF", "5-0", "7-0")],
  ["xdelex no option deletes", (r) => r.xdelex("s", undefined, "8-0", "1-0")],
  ["xdelex missing key", (r) => r.xdelex("missing", "ACKED", "1-0")],
  ["xdelex bad id", (r) => r.xdelex("s", "DELREF", "x-y")],
  ["xpending h after xdelex", (r) => r.xpending("s", "h", "-", "+", 10)],
  ["xlen after xdelex", (r) => r.xlen("s")],
  // XDEL and XTRIM on a stream of their own.
  [
    "xadd u 1..10",
    (r, batch) =>
      batch(Array.from({ length: 10 }, (_, i) => () => r.xadd("u", `${i + 1}-0`, { i }))),
  ],
  ["xdel one", (r) => r.xdel("u", "2-0")],
  ["xdel several", (r) => r.xdel("u", ["3-0", "99-0", "3-0"])],
  ["xdel bad id", (r) => r.xdel("u", "nope")],
  ["xtrim maxlen exact", (r) => r.xtrim("u", { strategy: "MAXLEN", threshold: 5, exactness: "=" })],
  ["xtrim minid approximate", (r) => r.xtrim("u", { strategy: "MINID", threshold: "9-0" })],
  ["xtrim minid exact", (r) => r.xtrim("u", { strategy: "MINID", threshold: "9", exactness: "=" })],
  ["xtrim missing", (r) => r.xtrim("missing", { strategy: "MAXLEN", threshold: 0 })],
  ["xlen u", (r) => r.xlen("u")],
  ["xrange u", (r) => r.xrange("u", "-", "+")],
];

// {ok: result} or {error: "Name: message"} of every step, in order.
async function play(redis, auto, sent) {
  const batch = async (calls) => {
    if (auto) return Promise.all(calls.map((call) => call()));
    const results = [];
    for (const call of calls) results.push(await call());
    return results;
  };
  const out = [];
  for (const [name, step] of STEPS) {
    const from = sent?.length;
    let outcome;
    try {
      outcome = { ok: await step(redis, batch) };
    } catch (e) {
      outcome = { error: `${e.name}: ${e.message}` };
    }
    out.push({ name, ...outcome, ...(sent ? { sent: sent.slice(from) } : {}) });
  }
  return out;
}

const resp = new Resp(Number(redisPort));
await resp.connect();
const runs = {};
for (const [mode, auto] of [
  ["auto-pipelining", true],
  ["one request a call", false],
]) {
  // The stock client auto-pipelines unless told not to.
  const sdk = new Redis({ url, token: TOKEN, ...(auto ? {} : { enableAutoPipelining: false }) });
  await sdk.flushall();
  const sent = [];
  const counts = { pipelined: 0 };
  const base = new Redis(referenceRequester(resp, sent, counts));
  const reference = auto ? base.autoPipeline() : base;
  await reference.flushall();
  runs[mode] = {
    xstreams: await play(sdk, auto),
    reference: await play(reference, auto, sent),
    pipelined: counts.pipelined,
  };
}
resp.close();
process.stdout.write(JSON.stringify(runs));
