// A plain scenario written against the types openapi-typescript generates from
// openapi/openapi.json with its default options: what a TypeScript user writes, with no casts.
// It is only type-checked (tsc --noEmit), never run.
import type { components, paths } from "./generated/xstreams";

type Schemas = components["schemas"];
type Problem = Schemas["Problem"];

// Request bodies: only what the user means; every field with a server-side default left out.
const one: Schemas["Append"] = { fields: { item: "book", qty: "2" } };
const batch: Schemas["Append"] = {
  entries: [{ fields: { a: "1" } }, { id: "*", fields: [["a", "2"], ["a", "3"]] }],
  trim: { maxlen: 1000 },
};
const exact: Schemas["Append"] = { id: "5-1", fields: { f: "v" }, nomkstream: true };
const trim: Schemas["Trim"] = { minid: "1526569495631-0" };
const approximate: Schemas["Trim"] = { maxlen: 10, approximate: true, limit: 100 };
const group: Schemas["NewGroup"] = { name: "workers" };
const groupFromStart: Schemas["NewGroup"] = { name: "audit", id: "0", mkstream: true };
const rewind: Schemas["GroupUpdate"] = { last_delivered_id: "0" };
const lastId: Schemas["LastId"] = { last_id: "9-9" };
const read: Schemas["Read"] = {};
const blockingRead: Schemas["Read"] = { count: 10, block_ms: 5000 };
const ack: Schemas["Ack"] = { ids: ["1526569495631-0"] };
const claim: Schemas["Claim"] = { consumer: "bob", min_idle_ms: 60000, ids: ["1-0"] };
const autoclaim: Schemas["AutoClaim"] = { consumer: "bob", min_idle_ms: 60000 };
// The Redis 8.x forms: reference policies, acknowledge-and-delete, release, claim on read.
const trimAcked: Schemas["Trim"] = { maxlen: 1000, policy: "ACKED" };
const ackDelete: Schemas["AckDelete"] = { ids: ["1-0"] };
const ackDeleteRefs: Schemas["AckDelete"] = { ids: ["1-0"], policy: "DELREF" };
const release: Schemas["Nack"] = { ids: ["1-0"], mode: "FAIL" };
const releaseFatal: Schemas["Nack"] = { ids: ["1-0"], mode: "FATAL", retry_count: 3, force: true };
const claimingRead: Schemas["Read"] = { count: 10, claim_idle_ms: 30000 };
// Delivery policies, redrive, retention: every part optional.
const policy: Schemas["Policy"] = { max_deliveries: 5, dead_letter_stream: "{orders}:dead" };
const timeoutOnly: Schemas["Policy"] = { visibility_timeout_ms: 30000, backoff_ms: [1000, 5000] };
const redriveAll: Schemas["Redrive"] = {};
const redriveSome: Schemas["Redrive"] = { ids: ["1-0"], to: "{orders}:retry" };
const keepADay: Schemas["Retention"] = { max_age_ms: 86400000 };
// Webhooks: url and secret, every other part defaulted; the view has no secret.
const hook: Schemas["WebhookSet"] = { url: "https://hooks.example.com/orders",
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" };
const pause: Schemas["WebhookPause"] = { paused: true };

const base = "http://127.0.0.1:8000";

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) {
    const problem: Problem = await response.json();
    throw new Error(`${problem.status} ${problem.code}: ${problem.error}`);
  }
  return (await response.json()) as T;
}

async function scenario(): Promise<void> {
  const appended = await call<Schemas["Appended"]>("POST", "/v1/streams/orders/entries", one);
  const first: string = appended.ids[0];
  await call<Schemas["Appended"]>("POST", "/v1/streams/orders/entries", batch);
  await call<Schemas["Appended"]>("POST", "/v1/streams/orders/entries", exact);
  const page = await call<Schemas["EntryList"]>("GET", "/v1/streams/orders/entries?count=10");
  for (const entry of page.entries) {
    console.log(entry.id, entry.fields);
  }
  const next: string | null | undefined = page.next;
  console.log(first, next);
  await call<Schemas["Trimmed"]>("POST", "/v1/streams/orders/trim", trim);
  await call<Schemas["Trimmed"]>("POST", "/v1/streams/orders/trim", approximate);
  await call<Schemas["Group"]>("POST", "/v1/streams/orders/groups", group);
  await call<Schemas["Group"]>("POST", "/v1/streams/orders/groups", groupFromStart);
  await call<Schemas["Group"]>("PATCH", "/v1/streams/orders/groups/workers", rewind);
  await call<Schemas["StreamInfo"]>("PUT", "/v1/streams/orders/last-id", lastId);
  const consumer = "/v1/streams/orders/groups/workers/consumers/alice/reads";
  const delivered = await call<Schemas["MaybeEntryList"]>("POST", consumer, read);
  await call<Schemas["MaybeEntryList"]>("POST", consumer, blockingRead);
  console.log(delivered.entries.length);
  await call<Schemas["Acked"]>("POST", "/v1/streams/orders/groups/workers/acks", ack);
  await call<Schemas["Claimed"]>("POST", "/v1/streams/orders/groups/workers/claims", claim);
  const auto = await call<Schemas["AutoClaimed"]>(
    "POST", "/v1/streams/orders/groups/workers/autoclaims", autoclaim);
  console.log(auto);
  await call<Schemas["Trimmed"]>("POST", "/v1/streams/orders/trim", trimAcked);
  const workers = "/v1/streams/orders/groups/workers";
  const gone = await call<Schemas["AckDeleted"]>("POST", `${workers}/ackdels`, ackDelete);
  await call<Schemas["AckDeleted"]>("POST", `${workers}/ackdels`, ackDeleteRefs);
  for (const row of gone.results) {
    const status: "deleted" | "not_found" | "kept" = row.status;
    console.log(row.id, status, gone.acknowledged, gone.kept, gone.not_found);
  }
  const released = await call<Schemas["Released"]>("POST", `${workers}/nacks`, release);
  await call<Schemas["Released"]>("POST", `${workers}/nacks`, releaseFatal);
  console.log(released.released);
  const claimed = await call<Schemas["MaybeEntryList"]>("POST", consumer, claimingRead);
  for (const entry of claimed.entries) {
    const idle: number | null | undefined = entry.idle_ms;
    const count: number | null | undefined = entry.delivery_count;
    console.log(entry.id, idle, count);
  }
  const deleted = await call<Schemas["Deleted"]>(
    "DELETE", "/v1/streams/orders/entries?id=1-0&policy=ACKED");
  console.log(deleted.deleted, deleted.kept, deleted.results?.[0]?.status);
  const set = await call<Schemas["Policy"]>("PUT", `${workers}/policy`, policy);
  await call<Schemas["Policy"]>("PUT", `${workers}/policy`, timeoutOnly);
  const dead: string | null | undefined = set.dead_letter_stream;
  const shown = await call<Schemas["Group"]>("GET", workers);
  const groupPolicy: Schemas["Policy"] | null = shown.policy;
  console.log(dead, groupPolicy?.max_deliveries);
  const moved = await call<Schemas["RedriveResult"]>(
    "POST", "/v1/streams/%7Borders%7D%3Adead/redrive", redriveAll);
  await call<Schemas["RedriveResult"]>("POST", "/v1/streams/%7Borders%7D%3Adead/redrive", redriveSome);
  for (const m of moved.moved) console.log(m.id, m.stream, m.new_id);
  console.log(moved.skipped.length);
  await call<Schemas["Retention"]>("PUT", "/v1/streams/orders/retention", keepADay);
  const hookUrl = `${workers}/webhooks/orders-hook`;
  const made = await call<Schemas["WebhookView"]>("PUT", hookUrl, hook);
  const paused = await call<Schemas["WebhookView"]>("PATCH", hookUrl, pause);
  const reason: string | null = paused.paused_reason;
  const hooks = await call<Schemas["WebhookList"]>("GET", `${workers}/webhooks`);
  for (const h of hooks.webhooks) console.log(h.name, h.url, h.paused, h.batch);
  // @ts-expect-error: a webhook's secret is never shown
  console.log(made.secret, reason);
}

// The event streams' errors are problem documents, not events.
type TailResponses = paths["/v1/streams/{stream}/events"]["get"]["responses"];
type GroupEventsResponses =
  paths["/v1/streams/{stream}/groups/{group}/consumers/{consumer}/events"]["get"]["responses"];
type ManyResponses = paths["/v1/events"]["get"]["responses"];
const busy: TailResponses[429]["content"]["application/problem+json"] = {
  type: "about:blank",
  title: "Too Many Requests",
  status: 429,
  detail: "ERR too many event streams (at most 10000 open)",
  code: "ERR",
  error: "ERR too many event streams (at most 10000 open)",
};
const noGroup: GroupEventsResponses[404]["content"]["application/problem+json"] = {
  type: "about:blank",
  title: "Not Found",
  status: 404,
  detail: "NOGROUP No such key 'orders' or consumer group 'workers'",
  code: "NOGROUP",
  error: "NOGROUP No such key 'orders' or consumer group 'workers'",
};
const tooMany: ManyResponses[429]["content"]["application/problem+json"] = busy;
const events: TailResponses[200]["content"]["text/event-stream"] = "event: entry\n";

void scenario;
void [busy, noGroup, tooMany, events];
