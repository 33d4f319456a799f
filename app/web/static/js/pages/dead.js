// A dead-letter stream's entries (written by a group's delivery policy), each split into its
// original fields and where it came from (the reserved xs-dl-* fields), with redrive: the
// selected entries, or all of them, appended back to their origin streams (POST …/redrive).

import { api, idTime, quote, streamPath, whoami } from "../api.js";
import { confirmAction, h, name, notice, number, replace, shown, table, when } from "../dom.js";

const PREFIX = "xs-dl-";
const ORIGIN = ["stream", "id", "group", "consumer", "deliveries", "reason"].map((n) => PREFIX + n);
const PAGE = 100;

const HOPS = PREFIX + "hops";

/** [original pairs, origin object] of a dead letter; null for an entry that is none. A dead
 * letter dead-lettered again keeps its first origin and ends with xs-dl-hops (its moves). */
export function split(pairs) {
  const n = ORIGIN.length;
  let end = pairs.length;
  let hops = null;
  const last = pairs[end - 1];
  if (last && last[0] === HOPS && /^[1-9][0-9]{0,14}$/.test(last[1])) {
    hops = last[1];
    end -= 1;
  }
  if (end < n) return null;
  const tail = pairs.slice(end - n, end);
  if (!tail.every(([f], i) => f === ORIGIN[i])) return null;
  const origin = Object.fromEntries(tail.map(([f, v]) => [f.slice(PREFIX.length), v]));
  if (hops !== null) origin.hops = hops;
  return [pairs.slice(0, end - n), origin];
}

export async function render(main, ctx) {
  const { stream } = ctx.params;
  const path = streamPath(stream);
  const [access] = (await whoami([stream])).streams;
  if (!ctx.alive()) return;
  const status = h("p", { hidden: true });
  const tbody = h("tbody");
  const selectedButton = h("button", { type: "button", disabled: true }, "Redrive selected");
  const allButton = h("button", { type: "button", class: "secondary" }, "Redrive all");
  const actions = access.write
    ? h("div", { class: "actions" }, selectedButton, allButton)
    : h("p", { class: "muted" }, "This credential may not write this stream: redrive is hidden.");
  replace(main,
    h("h1", {}, h("span", { class: "muted" }, "Dead letters in "),
      h("a", { href: `#/s/${quote(stream)}` }, name(stream))),
    h("p", { class: "muted" }, "Entries a group's delivery policy moved here after too many deliveries " +
      "(or XNACK FATAL). Redrive appends each back to the stream it came from, as a new entry, and " +
      "deletes it here."),
    status, actions,
    table(`Dead letters in ${shown(stream)}`, [
      access.write ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Select")) : null,
      h("th", { scope: "col" }, "ID"),
      h("th", { scope: "col" }, "Fields"),
      h("th", { scope: "col" }, "From"),
      h("th", { scope: "col", class: "num" }, "Deliveries"),
      h("th", { scope: "col" }, "Reason"),
    ], tbody));

  const selected = new Set();
  function selectionChanged() {
    selectedButton.disabled = selected.size === 0;
    selectedButton.textContent = selected.size ? `Redrive selected (${selected.size})` : "Redrive selected";
  }

  function row(e) {
    const parts = split(e.fields);
    const [fields, origin] = parts || [e.fields, null];
    const box = access.write && parts ? h("input", {
      type: "checkbox", "aria-label": `Select ${e.id}`, checked: selected.has(e.id),
      onchange: (ev) => {
        if (ev.target.checked) selected.add(e.id); else selected.delete(e.id);
        selectionChanged();
      },
    }) : null;
    return h("tr", { dataset: { id: e.id } },
      access.write ? h("td", {}, box) : null,
      h("td", { class: "id", title: when(idTime(e.id)) }, name(e.id)),
      h("td", { class: "fields" }, fields.map(([f, v]) => h("span", { class: "pair" }, h("b", {}, shown(f)), " ", shown(v)))),
      h("td", { class: "origin" }, origin
        ? [h("a", { href: `#/s/${quote(origin.stream)}` }, name(origin.stream)), " ", name(origin.id), " · ",
          name(origin.group), origin.consumer ? [" / ", name(origin.consumer)] : "",
          origin.hops ? ` · ${origin.hops} hops` : ""]
        : h("span", { class: "muted" }, "not a dead letter")),
      h("td", { class: "num" }, origin ? number(origin.deliveries) : ""),
      h("td", {}, origin ? origin.reason : ""));
  }

  async function refresh() {
    try {
      const r = await api("GET", `${path}/entries`, { query: { count: PAGE, fields: "pairs" } });
      if (!ctx.alive()) return;
      const ids = new Set(r.entries.map((e) => e.id));
      for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);
      selectionChanged();
      replace(tbody, r.entries.map(row));
      if (!r.entries.length) tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No dead letters.")));
    } catch (e) {
      if (!ctx.alive()) return;
      if (e.status === 404) replace(tbody, h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No dead letters.")));
      else notice(status, e.message, "error");
    }
  }

  async function redrive(body, what) {
    const ok = await confirmAction("Redrive?", `${what} go back to the streams they came from, as new entries.`, "Redrive");
    if (!ok) return;
    try {
      const r = await api("POST", `${path}/redrive`, { body });
      selected.clear();
      notice(status, `Moved ${r.moved.length} entries back` + (r.skipped.length ? `; skipped ${r.skipped.length}.` : "."));
    } catch (e) {
      notice(status, e.message, "error");
    }
    refresh();
  }

  selectedButton.addEventListener("click", () => redrive({ ids: [...selected] }, `${selected.size} selected entries`));
  allButton.addEventListener("click", () => redrive({}, "The oldest entries (up to a page)"));
  await refresh();
}
