// A live tail of one stream with EventSource and nothing else: /ui/tail.html?stream=orders.
// Same origin, so the xstreams_token cookie (or an open service on loopback) lets it in;
// otherwise add &access_token=<key or JWT> (EventSource cannot send an Authorization header).
const params = new URLSearchParams(location.search);
const stream = params.get("stream") || "orders";
const seen = `xstreams-tail:${stream}`; // the last ID shown, so a reload resumes after it

const url = new URL(`/v1/streams/${encodeURIComponent(stream)}/events`, location.href);
url.searchParams.set("last_id", sessionStorage.getItem(seen) || "$"); // $: new entries only
const token = params.get("access_token");
if (token) url.searchParams.set("access_token", token);

// Each entry is an `entry` event whose id is the entry ID: when the connection drops,
// EventSource reconnects by itself and sends Last-Event-ID, and the tail resumes after it.
const source = new EventSource(url);
const list = document.getElementById("entries");
const status = document.getElementById("status");
document.getElementById("stream").textContent = stream;

source.addEventListener("entry", (event) => {
  const entry = JSON.parse(event.data); // {"id": "1764345600000-0", "fields": {"item": "book"}}
  const item = document.createElement("li");
  item.dataset.id = entry.id;
  item.textContent = `${entry.id}  ${JSON.stringify(entry.fields)}`; // text, never markup
  list.append(item);
  sessionStorage.setItem(seen, entry.id);
});
source.addEventListener("gap", (event) => { // entries trimmed before they could be sent
  status.textContent = `Entries after ${JSON.parse(event.data).after} were removed before they were sent.`;
});
source.onopen = () => { status.textContent = "Live."; };
source.onerror = (event) => { // the service's `error` event carries a problem; else the connection
  status.textContent = event.data ? JSON.parse(event.data).detail
    : source.readyState === EventSource.CLOSED ? "Refused (no credential?) or ended." : "Reconnecting…";
};
