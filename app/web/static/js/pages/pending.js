// A group's pending entries (XPENDING, with IDLE and a consumer filter), sorted and filtered
// on the page, and the repairs for stuck work: claim to another consumer (XCLAIM), release
// back to the group (XNACK FAIL: unowned, the next claim of any consumer takes it first),
// acknowledge (XACK) and "autoclaim idle" (XAUTOCLAIM), each confirmed first.

import { api, groupPath, quote, whoami } from "../api.js";
import {
  confirmAction, dialogOpen, duration, every, field, h, name, notice, number, replace, shown, table,
} from "../dom.js";

const REFRESH_MS = 2000;

export async function render(main, ctx) {
  const { stream, group } = ctx.params;
  const path = groupPath(stream, group);
  const [access] = (await whoami([stream])).streams;
  if (!ctx.alive()) return;
  const status = h("p", { hidden: true });
  const title = h("h1", {}, h("span", { class: "muted" }, "Pending in "), name(group),
    h("span", { class: "muted" }, " of "), h("a", { href: `#/s/${quote(stream)}/groups` }, name(stream)));
  if (!access.consume) {
    replace(main, title, h("p", { class: "notice error", role: "alert" },
      "This credential may not inspect or repair this group's pending entries (it needs consume on the stream)."));
    return;
  }

  const summary = h("dl", { class: "facts" });
  const consumerSelect = h("select", { name: "consumer" }, h("option", { value: "" }, "Every consumer"));
  const idle = h("select", { name: "idle" },
    [["0", "Any idle time"], ["60000", "Idle > 1 min"], ["300000", "Idle > 5 min"], ["3600000", "Idle > 1 h"]]
      .map(([v, t]) => h("option", { value: v }, t)));
  const deliveries = h("input", { type: "number", name: "deliveries", min: "0", value: "0" });
  const filters = h("form", { class: "toolbar" },
    field("Consumer", consumerSelect), field("Idle", idle), field("Deliveries more than", deliveries));
  filters.addEventListener("submit", (e) => e.preventDefault());
  filters.addEventListener("change", () => {

    load("-");
  });

  const tbody = h("tbody");
  const selectAll = h("input", { type: "checkbox", "aria-label": "Select every entry shown" });
  const sortKeys = [["id", "ID"], ["consumer", "Consumer"], ["idle_ms", "Idle"], ["delivery_count", "Deliveries"]];
  let sort = { key: "id", dir: 1 };
  const headers = sortKeys.map(([key, label]) => {
    const b = h("button", { type: "button", class: "sort", dataset: { key } }, label);
    b.addEventListener("click", () => {
      sort = { key, dir: sort.key === key ? -sort.dir : key === "id" || key === "consumer" ? 1 : -1 };
      draw();
    });
    return h("th", { scope: "col", class: key === "idle_ms" || key === "delivery_count" ? "num" : null }, b);
  });
  const targets = h("datalist", { id: "consumers-list" });
  const claimTo = h("input", { type: "text", name: "claim-to", list: "consumers-list", spellcheck: "false", placeholder: "bob" });
  const claimSelected = h("button", { type: "button", disabled: true }, "Claim selected…");
  const releaseSelected = h("button", { type: "button", class: "secondary", disabled: true }, "Release selected…");
  const ackSelected = h("button", { type: "button", class: "danger", disabled: true }, "Acknowledge selected…");
  const more = h("button", { type: "button", class: "secondary", disabled: true }, "Next page →");
  const first = h("button", { type: "button", class: "secondary", disabled: true }, "← First page");
  const shownCount = h("span", { class: "muted", "aria-live": "polite" });

  replace(main, title, status, summary, filters,
    h("div", { class: "toolbar" }, targets, field("Claim to consumer", claimTo), claimSelected, releaseSelected, ackSelected),
    table("Pending entries", [h("th", { scope: "col" }, selectAll), ...headers,
      h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions"))], tbody),
    h("div", { class: "pager" }, first, shownCount, more),
    autoclaimForm());

  let rows = [];
  let selected = new Set();
  let start = "-";

  let nextStart = null;
  const PAGE = 100;

  async function load(from = start) {
    try {
      const p = await api("GET", `${path}/pending`, {
        query: { start: from, count: PAGE, consumer: consumerSelect.value, min_idle_ms: idle.value },
      });
      if (!ctx.alive()) return;
      start = from;
      rows = p.entries || [];
      nextStart = rows.length === PAGE ? `(${rows[rows.length - 1].id}` : null;
      more.disabled = nextStart === null;
      first.disabled = start === "-";
      drawSummary(p);
      draw();
      notice(status, status.classList.contains("error") ? "" : status.textContent, "ok");
    } catch (e) {
      if (ctx.alive()) notice(status, e.message, "error");
    }
  }
  more.addEventListener("click", () => {
    if (nextStart) load(nextStart);
  });
  first.addEventListener("click", () => load("-"));

  function drawSummary(p) {
    replace(summary, [
      ["Pending", number(p.count)],
      ["First", p.first_id ? name(p.first_id) : "—"],
      ["Last", p.last_id ? name(p.last_id) : "—"],
      ...p.consumers.map((c) => [name(c.name), `${number(c.pending)} pending`]),
    ].map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
    const current = consumerSelect.value;
    const names = p.consumers.map((c) => c.name);
    if (current && !names.includes(current)) names.push(current);
    replace(consumerSelect, h("option", { value: "" }, "Every consumer"),
      names.map((n) => h("option", { value: n, selected: n === current }, shown(n))));
    replace(targets, names.map((n) => h("option", { value: n })));
  }

  function visible() {
    const min = Number(deliveries.value) || 0;
    const out = rows.filter((r) => r.delivery_count > min);
    const { key, dir } = sort;
    const cmpId = (a, b) => {
      const [am, as] = a.split("-").map(BigInt);
      const [bm, bs] = b.split("-").map(BigInt);
      return am === bm ? (as < bs ? -1 : as > bs ? 1 : 0) : am < bm ? -1 : 1;
    };
    out.sort((a, b) => {
      const c = key === "id" ? cmpId(a.id, b.id)
        : key === "consumer" ? (a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : 0)
          : a[key] - b[key];
      return c * dir || cmpId(a.id, b.id);
    });
    return out;
  }

  function draw() {
    for (const th of headers) {
      const k = th.firstChild.dataset.key;
      th.setAttribute("aria-sort", k === sort.key ? (sort.dir > 0 ? "ascending" : "descending") : "none");
    }
    const list = visible();
    const ids = new Set(rows.map((r) => r.id));
    selected = new Set([...selected].filter((id) => ids.has(id)));
    const focusedId = tbody.contains(document.activeElement)
      ? document.activeElement.closest("tr")?.dataset.id : null;
    const focusedClass = document.activeElement?.className;
    replace(tbody, list.map((r) => {
      const box = h("input", { type: "checkbox", checked: selected.has(r.id), "aria-label": `Select ${r.id}` });
      box.addEventListener("change", () => {
        if (box.checked) selected.add(r.id);
        else selected.delete(r.id);
        updateBulk();
      });
      return h("tr", { dataset: { id: r.id } },
        h("td", {}, box),
        h("td", { class: "id" }, name(r.id)),
        h("td", {}, r.consumer === "" ? h("span", { class: "muted" }, "released") : name(r.consumer)),
        h("td", { class: "num" }, r.idle_ms < 0 ? "—" : duration(r.idle_ms)),
        h("td", { class: "num" }, number(r.delivery_count)),
        h("td", { class: "row-actions" },
          h("button", { type: "button", class: "small claim", onclick: () => claim([r.id]) }, "Claim…"),
          h("button", { type: "button", class: "small secondary release", onclick: () => release([r.id]) }, "Release…"),
          h("button", { type: "button", class: "small danger ack", onclick: () => ack([r.id]) }, "Ack…")));
    }));
    if (!list.length) {
      tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" },
        rows.length ? "No pending entry on this page passes the filters." : "Nothing pending.")));
    }
    if (focusedId) {
      const sel = focusedClass?.includes("ack") ? "button.ack" : focusedClass?.includes("release") ? "button.release"
        : focusedClass?.includes("claim") ? "button.claim" : "input";
      tbody.querySelector(`tr[data-id="${CSS.escape(focusedId)}"] ${sel}`)?.focus();
    }
    shownCount.textContent = `${list.length} of ${rows.length} on this page`;
    updateBulk();
  }

  function updateBulk() {
    claimSelected.disabled = releaseSelected.disabled = ackSelected.disabled = selected.size === 0;
    selectAll.checked = selected.size > 0 && selected.size === visible().length;
  }
  selectAll.addEventListener("change", () => {
    selected = new Set(selectAll.checked ? visible().map((r) => r.id) : []);
    draw();
  });
  claimSelected.addEventListener("click", () => claim([...selected]));
  releaseSelected.addEventListener("click", () => release([...selected]));
  ackSelected.addEventListener("click", () => ack([...selected]));

  async function claim(ids) {
    const to = claimTo.value.trim();
    if (!to) {
      notice(status, "Name the consumer to claim to first (Claim to consumer).", "error");
      claimTo.focus();
      return;
    }
    const ok = await confirmAction("Claim pending entries?",
      `${ids.length === 1 ? ids[0] : `${ids.length} entries`} will belong to ${shown(to)}, ` +
      "with their idle time reset and their delivery count raised by one.", "Claim");
    if (!ok) return;
    try {
      const r = await api("POST", `${path}/claims`, { body: { consumer: to, min_idle_ms: 0, ids } });
      notice(status, `Claimed ${r.ids.length} for ${shown(to)}` +
        (r.ids.length < ids.length ? ` (${ids.length - r.ids.length} were no longer pending or were deleted).` : "."));
      selected.clear();
      load();
    } catch (e) {
      notice(status, e.message, "error");
    }
  }

  async function release(ids) {
    const ok = await confirmAction("Release entries?",
      `${ids.length === 1 ? ids[0] : `${ids.length} entries`} will stay pending with no owner, ` +
      "to be taken first by the next claim of any consumer (XNACK FAIL: their delivery count is kept).",
      "Release");
    if (!ok) return;
    try {
      const r = await api("POST", `${path}/nacks`, { body: { ids, mode: "FAIL" } });
      notice(status, `Released ${r.released}` +
        (r.released < ids.length ? ` (${ids.length - r.released} were no longer pending).` : "."));
      selected.clear();
      load();
    } catch (e) {
      notice(status, e.message, "error");
    }
  }

  async function ack(ids) {
    const ok = await confirmAction("Acknowledge entries?",
      `${ids.length === 1 ? ids[0] : `${ids.length} entries`} will leave the pending list as processed; ` +
      "no consumer will be given them again.", "Acknowledge");
    if (!ok) return;
    try {
      const r = await api("POST", `${path}/acks`, { body: { ids } });
      notice(status, `Acknowledged ${r.acknowledged}.`);
      selected.clear();
      load();
    } catch (e) {
      notice(status, e.message, "error");
    }
  }

  function autoclaimForm() {
    const consumer = h("input", { type: "text", name: "autoclaim-consumer", required: true, list: "consumers-list", spellcheck: "false" });
    const minutes = h("input", { type: "number", name: "autoclaim-idle", value: "1", min: "0", step: "any" });
    const result = h("p", { hidden: true });
    const form = h("form", { class: "card", "aria-labelledby": "autoclaim-title" },
      h("h2", { id: "autoclaim-title" }, "Autoclaim idle entries"),
      h("p", { class: "muted" }, "Gives every entry idle at least this long to one consumer (XAUTOCLAIM), " +
        "and drops pending entries whose stream entry was deleted."),
      field("Consumer", consumer), field("Idle at least (minutes)", minutes),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Autoclaim…")),
      result);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const minIdle = Math.round((Number(minutes.value) || 0) * 60000);
      const ok = await confirmAction("Autoclaim idle entries?",
        `Every entry of ${shown(group)} idle for ${duration(minIdle)} or more will belong to ${shown(consumer.value)}.`,
        "Autoclaim");
      if (!ok) return;
      let claimed = 0;
      let deleted = 0;
      let from = "0-0";
      try {
        for (let i = 0; i < 50; i++) { // 50 × 100 entries at most per click
          const r = await api("POST", `${path}/autoclaims`, {
            body: { consumer: consumer.value, min_idle_ms: minIdle, start: from, count: 100 },
          });
          claimed += r.ids.length;
          deleted += r.deleted_ids.length;
          from = r.next_start;
          if (from === "0-0") break;
        }
        notice(result, `Claimed ${claimed} for ${shown(consumer.value)}` +
          (deleted ? `; ${deleted} deleted entries left the PEL.` : ".") +
          (from !== "0-0" ? " More remain: run it again." : ""));
        load();
      } catch (err) {
        notice(result, err.message, "error");
      }
    });
    return form;
  }

  await load("-");
  every(REFRESH_MS, ctx.alive, () => (dialogOpen() ? null : load()));
}
