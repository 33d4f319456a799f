// A stream's consumer groups (XINFO GROUPS) with lag and pending drawn over time, each
// group's consumers (XINFO CONSUMERS) with pending counts and idle times, and its webhooks
// with their health (last status and error, failures in a row, last attempt and success);
// creating a group, reading as a consumer, deleting a consumer, for credentials that may.

import { api, groupPath, quote, streamPath, whoami } from "../api.js";
import { History, lines } from "../charts.js";
import {
  ago, confirmAction, dialogOpen, duration, every, field, h, name, notice, number, replace, shown, table,
} from "../dom.js";

const REFRESH_MS = 1000;
const lagHistory = new History(90);
const pendingHistory = new History(90);

export async function render(main, ctx) {
  const { stream } = ctx.params;
  const path = streamPath(stream);
  const [access] = (await whoami([stream])).streams;
  if (!ctx.alive()) return;
  const status = h("p", { hidden: true });
  const list = h("div", { class: "groups" });
  replace(main,
    h("h1", {}, h("span", { class: "muted" }, "Groups of "), h("a", { href: `#/s/${quote(stream)}` }, name(stream))),
    status, list);
  if (access.write) main.append(createForm(path, refresh));
  if (access.consume) main.append(readForm(path, refresh));
  if (!access.write || !access.consume) {
    main.append(h("p", { class: "muted" },
      !access.write && !access.consume
        ? "This credential may not create groups, delete consumers or read as a consumer: those are hidden."
        : !access.write ? "This credential may not create groups or delete consumers: those are hidden."
          : "This credential may not read as a consumer: that is hidden."));
  }

  const cards = new Map(); // group name -> its card's parts

  async function refresh() {
    try {
      const { groups } = await api("GET", `${path}/groups`);
      const consumers = await Promise.all(groups.map((g) =>
        api("GET", `${groupPath(stream, g.name)}/consumers`).then((r) => r.consumers, () => [])));
      const hooks = await Promise.all(groups.map((g) =>
        api("GET", `${groupPath(stream, g.name)}/webhooks`).then((r) => r.webhooks, () => [])));
      if (!ctx.alive()) return;
      draw(groups, consumers, hooks);
      if (status.classList.contains("error")) notice(status, ""); // news stay, errors go
    } catch (e) {
      if (ctx.alive()) notice(status, e.message, "error");
    }
  }

  function draw(groups, consumers, hooks) {
    const names = new Set(groups.map((g) => g.name));
    for (const [name, card] of cards) {
      if (!names.has(name)) {
        card.el.remove();
        cards.delete(name);
      }
    }
    if (!groups.length) replace(list, h("p", { class: "muted" }, "No consumer groups yet."));
    else if (!cards.size) list.replaceChildren();
    groups.forEach((g, i) => {
      let card = cards.get(g.name);
      if (!card) {
        card = makeCard(g.name);
        cards.set(g.name, card);
        list.append(card.el);
      }
      const key = `${stream}\u0000${g.name}`;
      const lag = lagHistory.push(key, g.lag ?? 0);
      const pending = pendingHistory.push(key, g.pending);
      replace(card.facts, [
        ["Last delivered", name(g.last_delivered_id)],
        ["Entries read", g.entries_read === null ? "unknown" : number(g.entries_read)],
        ["Lag", g.lag === null ? "unknown" : number(g.lag)],
        ["Pending", number(g.pending)],
        ["Consumers", number(g.consumers)],
        ["Delivery policy", policyText(g.policy)],
      ].map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
      replace(card.chart, lines(lag, pending, `${shown(g.name)}: lag ${g.lag ?? "unknown"}, pending ${g.pending}, over the last ${lag.length} seconds`,
        { unit: "entries", samples: lagHistory.size, seconds: (lagHistory.size * REFRESH_MS) / 1000 }),
        h("p", { class: "legend" }, h("span", { class: "key-a" }, "lag"), " ", h("span", { class: "key-b" }, "pending")));
      drawConsumers(card, g.name, consumers[i]);
      drawWebhooks(card, hooks[i]);
    });
  }

  function makeCard(group) {
    const facts = h("dl", { class: "facts" });
    const chart = h("div", { class: "chart-box" });
    const tbody = h("tbody");
    const hookBody = h("tbody");
    const hooks = h("div", { class: "webhooks", hidden: true },
      table(`Webhooks of ${shown(group)}`, [
        h("th", { scope: "col" }, "Webhook"),
        h("th", { scope: "col" }, "State"),
        h("th", { scope: "col", class: "num" }, "Last status"),
        h("th", { scope: "col", class: "num" }, "Failures in a row"),
        h("th", { scope: "col" }, "Last attempt"),
        h("th", { scope: "col" }, "Last success"),
        h("th", { scope: "col" }, "Last error"),
      ], hookBody));
    const pendingLink = h("a", { href: `#/s/${quote(stream)}/groups/${quote(group)}/pending` }, "Pending entries →");
    const el = h("section", { class: "card group", "aria-label": `Group ${shown(group)}`, dataset: { group } },
      h("h2", {}, name(group)),
      h("div", { class: "group-top" }, facts, chart),
      table(`Consumers of ${shown(group)}`, [
        h("th", { scope: "col" }, "Consumer"),
        h("th", { scope: "col", class: "num" }, "Pending"),
        h("th", { scope: "col", class: "num" }, "Idle"),
        access.write ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")) : null,
      ], tbody),
      hooks,
      h("p", {}, pendingLink));
    return { el, facts, chart, tbody, hooks, hookBody };
  }

  function drawConsumers(card, group, consumers) {
    const rows = consumers.map((c) => h("tr", { dataset: { consumer: c.name } },
      h("th", { scope: "row" }, name(c.name)),
      h("td", { class: "num" }, number(c.pending)),
      h("td", { class: "num" }, duration(c.idle_ms)),
      access.write ? h("td", {}, h("button", {
        type: "button", class: "danger small",
        "aria-label": `Delete consumer ${shown(c.name)}`,
        onclick: () => deleteConsumer(group, c),
      }, "Delete")) : null));
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No consumers.")));
    // Keep the focused button across refreshes.
    const focused = card.tbody.contains(document.activeElement)
      ? document.activeElement.closest("tr")?.dataset.consumer : null;
    replace(card.tbody, rows);
    if (focused !== null && focused !== undefined) {
      card.tbody.querySelector(`tr[data-consumer="${CSS.escape(focused)}"] button`)?.focus();
    }
  }

  /** A webhook's state with its reason: running, paused (why) or refused (the outbound
   * rules refuse its URL now: it is not run until the setting or the URL changes). */
  function webhookState(w) {
    const state = w.state ?? (w.paused ? "paused" : "running");
    const reason = w.reason ?? (w.paused ? w.paused_reason : null);
    return reason ? `${state}: ${reason}` : state;
  }

  /** A group's webhooks and their health; the table shows only when there are some. */
  function drawWebhooks(card, hooks) {
    card.hooks.hidden = !hooks.length;
    replace(card.hookBody, hooks.map((w) => {
      const failing = w.consecutive_failures > 0 || (w.last_error !== null && w.last_error !== undefined);
      return h("tr", { dataset: { webhook: w.name }, class: failing ? "failing" : null },
        h("th", { scope: "row" }, name(w.name), h("div", { class: "muted url" }, name(w.url))),
        h("td", { class: "state" }, webhookState(w)),
        h("td", { class: "num status" }, w.last_status ?? "—"),
        h("td", { class: "num failures" }, number(w.consecutive_failures)),
        h("td", {}, ago(w.last_attempt_at_ms)),
        h("td", {}, ago(w.last_success_at_ms)),
        h("td", { class: "error" }, w.last_error ?? "—"));
    }));
  }

  async function deleteConsumer(group, c) {
    const ok = await confirmAction("Delete the consumer?",
      `${shown(c.name)} leaves ${shown(group)}` +
      (c.pending ? `, and its ${c.pending} pending entries leave the PEL unacknowledged (no one will be able to claim them).` : "."),
      "Delete consumer");
    if (!ok) return;
    try {
      const r = await api("DELETE", `${groupPath(stream, group)}/consumers/${quote(c.name)}`);
      notice(status, `Deleted ${shown(c.name)} (${r.pending} pending entries dropped).`);
      refresh();
    } catch (e) {
      notice(status, e.message, "error");
    }
  }

  await refresh();
  every(REFRESH_MS, ctx.alive, () => (dialogOpen() ? null : refresh()));
}

/** A group's delivery policy in words, its dead-letter stream a link to its view. */
function policyText(p) {
  if (!p) return "none (plain Redis)";
  const parts = [];
  if (p.visibility_timeout_ms !== null && p.visibility_timeout_ms !== undefined) {
    parts.push(`visibility timeout ${duration(p.visibility_timeout_ms)}`);
  }
  if (p.backoff_ms && p.backoff_ms.length) parts.push(`back-off ${p.backoff_ms.map(duration).join(", ")}`);
  if (p.max_deliveries !== null && p.max_deliveries !== undefined) parts.push(`at most ${number(p.max_deliveries)} deliveries`);
  const text = parts.join(" · ") || "set";
  if (p.dead_letter_stream === null || p.dead_letter_stream === undefined) return text;
  return h("span", { class: "policy" }, `${text} · dead letters to `,
    h("a", { href: `#/s/${quote(p.dead_letter_stream)}/dead` }, name(p.dead_letter_stream)));
}

function createForm(path, refresh) {
  const name = h("input", { type: "text", name: "group", required: true, spellcheck: "false" });
  const id = h("input", { type: "text", name: "id", value: "$", spellcheck: "false" });
  const status = h("p", { hidden: true });
  const form = h("form", { class: "card", "aria-labelledby": "create-title" },
    h("h2", { id: "create-title" }, "Create a group"),
    field("Name", name),
    field("Deliver entries after", id, "$: only new entries; 0: the whole stream"),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create")),
    status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api("POST", `${path}/groups`, { body: { name: name.value, id: id.value || "$" } });
      notice(status, `Created ${shown(name.value)}.`);
      refresh();
    } catch (err) {
      notice(status, err.message, "error");
    }
  });
  return form;
}

function readForm(path, refresh) {
  const group = h("input", { type: "text", name: "read-group", required: true, spellcheck: "false" });
  const consumer = h("input", { type: "text", name: "consumer", required: true, spellcheck: "false" });
  const count = h("input", { type: "number", name: "count", value: "10", min: "1" });
  const status = h("p", { hidden: true });
  const form = h("form", { class: "card", "aria-labelledby": "read-title" },
    h("h2", { id: "read-title" }, "Read as a consumer"),
    h("p", { class: "muted" }, "Delivers new entries (>) to the consumer; they stay pending until acknowledged."),
    field("Group", group), field("Consumer", consumer), field("Count", count),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Read")),
    status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const r = await api("POST", `${path}/groups/${quote(group.value)}/consumers/${quote(consumer.value)}/reads`,
        { body: { id: ">", count: Number(count.value) || 1 } });
      notice(status, `Delivered ${r.entries.length} entries to ${shown(consumer.value)}.`);
      refresh();
    } catch (err) {
      notice(status, err.message, "error");
    }
  });
  return form;
}
