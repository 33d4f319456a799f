// One stream: its info (XINFO STREAM), entries a page at a time newest first (XREVRANGE),
// a jump to an ID or a time, a live tail over SSE (pause, gap notices), and, for a credential
// that may write it, an append form (fields as pairs) and trim.
//
// The tail renders in batches: events only queue entries, and a requestAnimationFrame
// callback at most every FLUSH_MS puts the newest MAX_BATCH of them on screen (one-line rows
// of a fixed-layout table in its own contained frame) and drops rows past MAX_ROWS, so a
// stream taking 1,000 entries a second costs one small DOM update ten times a second. Every
// entry is still counted, and pages (or a pause) show every one.

import { api, events, idTime, quote, streamPath, whoami } from "../api.js";
import { confirmAction, every, field, h, name, notice, number, replace, shown, table, when } from "../dom.js";

const PAGE = 50;
const MAX_ROWS = 60; // rows kept while tailing (about three screens)
const MAX_BATCH = 30; // rows drawn per batch: faster than that, nobody reads them anyway
const FLUSH_MS = 100; // the tail draws at most ten times a second, each time a batch
const INFO_REFRESH_MS = 2000;

export async function render(main, ctx) {
  const { stream } = ctx.params;
  const path = streamPath(stream);
  const [access] = (await whoami([stream])).streams;
  if (!ctx.alive()) return;

  const infoList = h("dl", { class: "facts" });
  const infoStatus = h("p", { hidden: true });
  const groupsLink = h("a", { href: `#/s/${quote(stream)}/groups` }, "Consumer groups →");
  replace(main,
    h("h1", {}, h("span", { class: "muted" }, "Stream "), name(stream)),
    infoStatus, infoList, h("p", {}, groupsLink));

  async function info() {
    try {
      const i = await api("GET", path);
      if (!ctx.alive()) return;
      const facts = [
        ["Length", number(i.length)],
        ["Entries added", number(i.entries_added)],
        ["First entry", i.first_entry ? [name(i.first_entry.id), ` · ${when(idTime(i.first_entry.id))}`] : "—"],
        ["Last entry", i.last_entry ? [name(i.last_entry.id), ` · ${when(idTime(i.last_entry.id))}`] : "—"],
        ["Last generated ID", name(i.last_generated_id)],
        ["Groups", number(i.groups)],
      ];
      replace(infoList, facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
      notice(infoStatus, "");
    } catch (e) {
      if (ctx.alive()) notice(infoStatus, e.message, "error");
    }
  }
  await info();
  every(INFO_REFRESH_MS, ctx.alive, info);

  main.append(entriesSection(ctx, stream, path, access));
  if (access.write) {
    main.append(appendSection(stream, path), trimSection(stream, path));
  } else {
    main.append(h("p", { class: "muted" }, "This credential may not write this stream: append and trim are hidden."));
  }
}

function entriesSection(ctx, stream, path, access) {
  const tbody = h("tbody");
  const status = h("p", { hidden: true });
  const gap = h("p", { hidden: true });
  const live = h("input", { type: "checkbox", name: "live", id: "live" });
  const pause = h("button", { type: "button", class: "secondary", disabled: true }, "Pause");
  const tailState = h("span", { class: "muted", "aria-live": "polite" });
  const jump = h("input", { type: "text", name: "jump", placeholder: "1700000000000-0 or 2026-11-23 14:00", spellcheck: "false", size: 30 });
  const newer = h("button", { type: "button", class: "secondary" }, "← Newer");
  const older = h("button", { type: "button", class: "secondary" }, "Older →");
  const newest = h("button", { type: "button", class: "secondary" }, "Newest");
  const pageInfo = h("span", { class: "muted" });

  let olderFrom = null; // `end` for the next older page, from the API's `next`
  let newerStack = []; // `end` of the pages seen before, to come back

  const jumpForm = h("form", { class: "toolbar" },
    field("Jump to an ID or a time", jump),
    h("button", { type: "submit" }, "Go"));
  jumpForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const end = parseJump(jump.value.trim());
    if (end === null) {
      notice(status, "Give an entry ID (ms-seq or ms) or a date and time.", "error");
      return;
    }
    newerStack = [];
    page(end);
  });

  // Its own scrolling frame, laid out apart from the page (CSS containment): a frame of the
  // live tail re-lays out and repaints this box only.
  const entriesTable = table("Entries, newest first", [
    h("th", { scope: "col", class: "col-id" }, "ID"),
    h("th", { scope: "col", class: "wide-only col-time" }, "Time"),
    h("th", { scope: "col" }, "Fields"),
  ], tbody);
  entriesTable.classList.add("entries");
  const section = h("section", { "aria-labelledby": "entries-title" },
    h("h2", { id: "entries-title" }, "Entries"),
    h("div", { class: "toolbar" },
      h("label", { class: "switch", for: "live" }, live, " Live tail"),
      pause, tailState),
    gap,
    jumpForm,
    status,
    entriesTable,
    h("div", { class: "pager" }, newer, newest, pageInfo, older));

  function entryRow(e) {
    const fields = Array.isArray(e.fields) ? e.fields : Object.entries(e.fields || {});
    return h("tr", {},
      h("td", { class: "id" }, name(e.id)),
      h("td", { class: "wide-only" }, when(idTime(e.id))),
      h("td", { class: "fields" }, fields.map(([f, v]) =>
        h("span", { class: "pair" }, h("b", {}, shown(f)), " ", shown(v)))));
  }

  async function page(end = "+") {
    try {
      const r = await api("GET", `${path}/entries`, {
        query: { order: "desc", end, count: PAGE, fields: "pairs" },
      });
      if (!ctx.alive()) return;
      replace(tbody, r.entries.map(entryRow));
      if (!r.entries.length) tbody.append(h("tr", {}, h("td", { colspan: 3, class: "muted" }, "No entries here.")));
      olderFrom = r.next;
      current = end;
      older.disabled = olderFrom === null;
      newer.disabled = newerStack.length === 0;
      pageInfo.textContent = r.entries.length
        ? `${r.entries[0].id} … ${r.entries[r.entries.length - 1].id}` : "";
      notice(status, "");
      return r.entries;
    } catch (e) {
      if (ctx.alive()) notice(status, e.message, "error");
      return [];
    }
  }
  let current = "+";
  older.addEventListener("click", () => {
    if (olderFrom === null) return;
    newerStack.push(current);
    page(olderFrom);
  });
  newer.addEventListener("click", () => {
    if (newerStack.length) page(newerStack.pop());
  });
  newest.addEventListener("click", () => {
    newerStack = [];
    page("+");
  });

  // The live tail.
  let source = null;
  let lastId = null; // the newest entry shown: where a resumed tail starts
  let queue = [];
  let frame = 0;
  let received = 0;
  let paused = false;
  let flushed = 0;

  function flush(now) {
    if (now - flushed < FLUSH_MS) {
      frame = requestAnimationFrame(flush);
      return;
    }
    frame = 0;
    flushed = now;
    if (!queue.length) return;
    const batch = queue.length > MAX_BATCH ? queue.slice(-MAX_BATCH) : queue;
    queue = [];
    const fragment = document.createDocumentFragment();
    for (let i = batch.length - 1; i >= 0; i--) fragment.append(entryRow(batch[i]));
    if (tbody.rows.length === 1 && !tbody.rows[0].cells[0].classList.contains("id")) tbody.replaceChildren();
    tbody.prepend(fragment);
    while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(-1);
    tailState.textContent = `Live: ${number(received)} entries received, newest ${lastId}`;
  }

  function start() {
    const from = lastId || "0-0";
    source = events(`${path}/events`, { last_id: from, fields: "pairs" });
    source.addEventListener("entry", (e) => {
      const entry = JSON.parse(e.data);
      lastId = entry.id;
      received++;
      queue.push(entry);
      if (queue.length > MAX_BATCH * 4) queue = queue.slice(-MAX_BATCH);
      if (!frame) frame = requestAnimationFrame(flush);
    });
    source.addEventListener("gap", (e) => {
      const g = JSON.parse(e.data);
      notice(gap, `Entries after ${g.after} were removed (trimmed or deleted) before they could be shown` +
        (g.first_id ? `; the tail goes on from ${g.first_id}.` : "."), "warn");
    });
    source.addEventListener("error", (e) => {
      if (e.data) notice(status, JSON.parse(e.data).detail || e.data, "error");
    });
    source.onopen = () => {
      tailState.textContent = `Live: ${number(received)} entries received` + (lastId ? `, newest ${lastId}` : "");
      notice(status, "");
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        notice(status, "The live tail was refused or ended (is the credential still valid?).", "error");
        live.checked = false;
        stop();
      } else {
        tailState.textContent = "Reconnecting…";
      }
    };
  }

  function stop() {
    if (source) source.close();
    source = null;
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    queue = [];
  }

  live.addEventListener("change", async () => {
    stop();
    paused = false;
    pause.textContent = "Pause";
    pause.disabled = !live.checked;
    entriesTable.classList.toggle("live", live.checked); // one line per entry while tailing
    notice(gap, "");
    if (!live.checked) {
      tailState.textContent = "";
      newerStack = [];
      page("+");
      return;
    }
    newerStack = [];
    const shownNow = await page("+");
    lastId = shownNow.length ? shownNow[0].id : null;
    received = 0;
    older.disabled = newer.disabled = newest.disabled = true;
    jump.disabled = true;
    pageInfo.textContent = "";
    start();
  });
  live.addEventListener("change", () => {
    if (!live.checked) newest.disabled = jump.disabled = false;
  });
  pause.addEventListener("click", () => {
    paused = !paused;
    if (paused) {
      // Draw what already arrived: the resumed tail starts after the newest entry received.
      if (frame) cancelAnimationFrame(frame);
      flushed = 0;
      if (queue.length) flush(performance.now());
      stop();
      pause.textContent = "Resume";
      tailState.textContent = `Paused at ${lastId || "the start"}: entries after it will follow on resume.`;
    } else {
      pause.textContent = "Pause";
      start();
    }
  });
  ctx.onLeave(stop);

  if (!access.read) {
    notice(status, "This credential may not read this stream.", "error");
  } else {
    page("+");
  }
  return section;
}

/** An entry ID (`ms-seq`, `ms`) or a date-time, as the `end` of a descending page. */
function parseJump(text) {
  if (!text) return "+";
  if (/^\d+(-\d+)?$/.test(text)) return text;
  const ms = Date.parse(text.replace(" ", "T"));
  return Number.isNaN(ms) ? null : String(ms);
}

function appendSection(stream, path) {
  const pairs = h("div", { class: "pairs" });
  const status = h("p", { hidden: true });
  const id = h("input", { type: "text", name: "id", value: "*", spellcheck: "false", size: 22 });
  function addPair(f = "", v = "") {
    const remove = h("button", { type: "button", class: "secondary small", "aria-label": "Remove this field" }, "×");
    const rowEl = h("div", { class: "pair-row" },
      field("Field", h("input", { type: "text", name: "field", value: f, required: true, spellcheck: "false" })),
      field("Value", h("input", { type: "text", name: "value", value: v, spellcheck: "false" })),
      remove);
    remove.addEventListener("click", () => {
      if (pairs.children.length > 1) rowEl.remove();
    });
    pairs.append(rowEl);
    return rowEl;
  }
  addPair();
  const form = h("form", { class: "card", "aria-labelledby": "append-title" },
    h("h2", { id: "append-title" }, "Append an entry"),
    field("ID", id, "* lets the service choose"),
    pairs,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "secondary", onclick: () => addPair().querySelector("input").focus() }, "+ Field"),
      h("button", { type: "submit" }, "Append")),
    status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const fields = [...pairs.querySelectorAll(".pair-row")].map((r) => {
      const [f, v] = r.querySelectorAll("input");
      return [f.value, v.value];
    });
    try {
      const r = await api("POST", `${path}/entries`, { body: { id: id.value || "*", fields } });
      notice(status, `Appended ${r.ids[0]}.`);
    } catch (err) {
      notice(status, err.message, "error");
    }
  });
  return form;
}

function trimSection(stream, path) {
  const strategy = h("select", { name: "strategy" },
    h("option", { value: "maxlen" }, "Keep the newest N entries (MAXLEN)"),
    h("option", { value: "minid" }, "Remove entries below an ID (MINID)"));
  const threshold = h("input", { type: "text", name: "threshold", required: true, spellcheck: "false" });
  const approximate = h("input", { type: "checkbox", name: "approximate" });
  const status = h("p", { hidden: true });
  const form = h("form", { class: "card", "aria-labelledby": "trim-title" },
    h("h2", { id: "trim-title" }, "Trim"),
    field("Strategy", strategy),
    field("Threshold", threshold, "a number of entries, or an ID"),
    h("label", { class: "switch" }, approximate, " Approximate (~): whole nodes only, cheaper"),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "danger" }, "Trim…")),
    status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const how = strategy.value === "maxlen"
      ? `keep only the newest ${threshold.value} entries of`
      : `remove the entries below ${threshold.value} from`;
    const ok = await confirmAction("Trim the stream?",
      `This will ${how} ${shown(stream)}${approximate.checked ? " (approximately)" : ""}. Removed entries cannot be brought back.`,
      "Trim");
    if (!ok) return;
    const body = { approximate: approximate.checked };
    const t = threshold.value.trim();
    // A number as a number; anything else as typed, for the service to refuse in words.
    if (strategy.value === "maxlen") body.maxlen = /^-?\d+$/.test(t) ? Number(t) : t;
    else body.minid = t;
    try {
      const r = await api("POST", `${path}/trim`, { body });
      notice(status, `Removed ${number(r.trimmed)} entries.`);
    } catch (err) {
      notice(status, err.message, "error");
    }
  });
  return form;
}
