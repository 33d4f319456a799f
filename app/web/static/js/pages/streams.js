// Streams: every stream the credential may read (GET /v1/streams, SCAN with MATCH), a page
// at a time by cursor, so 100,000 streams cost one page each. Entry times are the first and
// last entry IDs' times; the rate is entries_added between two refreshes of the page.

import { api, idTime, quote } from "../api.js";
import { History, sparkline } from "../charts.js";
import { ago, every, field, h, name, notice, number, replace, shown, table, when } from "../dom.js";

const REFRESH_MS = 2000;
const MAX_REQUESTS = 20; // per page: a sparse MATCH may need several SCAN steps

const history = new History(30); // rates per stream, kept while the tab lives
const lastSeen = new Map(); // name -> [time ms, entries_added]

export async function render(main, ctx) {
  const match = ctx.query.get("match") || "";
  const size = Number(ctx.query.get("size")) || 50;
  const cursors = [0];
  let at = 0;
  let next = null;

  const filter = h("input", {
    type: "search", name: "match", value: match, placeholder: "orders-*", spellcheck: "false",
  });
  const sizeSelect = h("select", { name: "size" },
    [25, 50, 100, 200].map((n) => h("option", { value: n, selected: n === size }, n)));
  const form = h("form", { class: "toolbar", role: "search" },
    field("Filter (glob)", filter),
    field("Per page", sizeSelect),
    h("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    if (filter.value) q.set("match", filter.value);
    if (sizeSelect.value !== "50") q.set("size", sizeSelect.value);
    location.hash = "#/" + (q.toString() ? "?" + q : "");
  });

  const status = h("p", { hidden: true });
  const tbody = h("tbody");
  const summary = h("p", { class: "muted", "aria-live": "polite" });
  const prev = h("button", { type: "button", class: "secondary", disabled: true }, "← Previous");
  const more = h("button", { type: "button", class: "secondary", disabled: true }, "Next →");
  prev.addEventListener("click", () => {
    if (at > 0) load(--at);
  });
  more.addEventListener("click", () => {
    if (next !== null) {
      cursors[++at] = next;
      load(at);
    }
  });

  replace(main,
    h("h1", {}, "Streams"),
    form,
    status,
    table("Streams", [
      h("th", { scope: "col" }, "Name"),
      h("th", { scope: "col", class: "num" }, "Length"),
      h("th", { scope: "col", class: "wide-only" }, "First entry"),
      h("th", { scope: "col" }, "Last entry"),
      h("th", { scope: "col" }, "Entries/s"),
      h("th", { scope: "col", class: "num" }, "Groups"),
    ], tbody),
    h("div", { class: "pager" }, prev, summary, more));

  async function fetchPage(cursor) {
    const found = [];
    let c = cursor;
    for (let i = 0; i < MAX_REQUESTS; i++) {
      const page = await api("GET", "/streams", {
        query: { cursor: c, count: match ? Math.max(size, 1000) : size, match },
      });
      found.push(...page.streams);
      c = page.next_cursor;
      if (c === null || found.length >= size) break;
    }
    return { streams: found, next: c };
  }

  async function load(index, refreshing = false) {
    try {
      const page = await fetchPage(cursors[index]);
      if (!ctx.alive() || index !== at) return;
      next = page.next;
      page.streams.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      draw(page.streams, refreshing);
      prev.disabled = at === 0;
      more.disabled = next === null;
      summary.textContent = `Page ${at + 1}: ${page.streams.length} streams` +
        (next === null ? " (end)" : "");
      notice(status, "");
    } catch (e) {
      if (ctx.alive()) notice(status, e.message, "error");
    }
  }

  function rate(s) {
    const now = performance.now();
    const before = lastSeen.get(s.name);
    lastSeen.set(s.name, [now, s.entries_added]);
    if (!before || now - before[0] < 200) return history.get(s.name);
    const perS = Math.max(0, (s.entries_added - before[1]) / ((now - before[0]) / 1000));
    return history.push(s.name, perS);
  }

  function draw(streams, refreshing) {
    const rows = tbody.rows;
    const same = refreshing && rows.length === streams.length &&
      streams.every((s, i) => rows[i].dataset.name === s.name);
    if (!same) {
      replace(tbody, streams.map((s) => row(s)));
      if (!streams.length) {
        tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" },
          match ? `No stream matches ${match} on this page.` : "No streams yet.")));
      }
    }
    streams.forEach((s, i) => fill(rows[i], s));
  }

  function row(s) {
    const href = `#/s/${quote(s.name)}`;
    return h("tr", { dataset: { name: s.name } },
      h("th", { scope: "row" }, h("a", { href }, name(s.name))),
      h("td", { class: "num" }), h("td", { class: "wide-only" }), h("td"), h("td", { class: "rate" }),
      h("td", { class: "num" }, h("a", { href: `${href}/groups` })));
  }

  function fill(tr, s) {
    const [, length, first, last, rateCell, groups] = tr.cells;
    length.textContent = number(s.length);
    first.textContent = when(idTime(s.first_entry_id));
    last.textContent = s.last_entry_id ? ago(idTime(s.last_entry_id)) : "—";
    last.title = when(idTime(s.last_entry_id));
    const series = rate(s);
    const current = series.length ? series[series.length - 1] : 0;
    replace(rateCell, h("span", { class: "num" }, current.toFixed(current < 10 ? 1 : 0)),
      sparkline(series, `${shown(s.name)}: ${current.toFixed(1)} entries per second`));
    groups.firstChild.textContent = number(s.groups);
  }

  await load(0);
  every(REFRESH_MS, ctx.alive, () => load(at, true));
}
