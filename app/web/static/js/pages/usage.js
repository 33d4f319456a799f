// The credential's limits and what is left of them (GET /v1/whoami's `limits`): requests,
// bytes appended and entries read, each a rate with a burst (docs/operations/access.md,
// "Rate limits"). The admin also sees every API key held to a limit (GET /v1/whoami/keys).
// Reading this page spends one request of the budget it shows, as any request does.

import { api, whoami } from "../api.js";
import { every, h, number, replace, shown, table } from "../dom.js";

const REFRESH_MS = 5000;
const WORDS = { requests: "Requests", bytes: "Bytes appended", entries: "Entries read" };

function rows(limits) {
  return limits.map((l) => h("tr", { "data-policy": l.policy },
    h("td", {}, WORDS[l.policy] || l.policy),
    h("td", {}, h("code", {}, l.rate)),
    h("td", { class: "num" }, number(l.remaining)),
    h("td", { class: "num" }, l.reset_ms ? `${(l.reset_ms / 1000).toFixed(1)} s` : "now")));
}

const HEADERS = () => [
  h("th", { scope: "col" }, "Limit"),
  h("th", { scope: "col" }, "Rate"),
  h("th", { scope: "col", class: "num" }, "Left now"),
  h("th", { scope: "col", class: "num" }, "Whole again in"),
];

export async function render(main, ctx) {
  const mine = h("tbody");
  const keys = h("div", { id: "key-usage" });
  const own = h("div", { id: "own-usage" });
  replace(main,
    h("h1", {}, "Usage"),
    h("p", { class: "muted" }, "Each limit is a rate with a burst: what is left now, and when the whole " +
      "burst is back. A read that returned more entries than were left leaves a debt: reads are " +
      "refused (429) until the rate has repaid it."),
    own, keys);

  async function load() {
    const me = await whoami([]);
    if (!ctx.alive()) return;
    if (me.limits.length) {
      replace(mine, ...rows(me.limits));
      replace(own, h("h2", {}, `${shown(me.name)} (${me.kind})`), table("This credential's limits", HEADERS(), mine));
    } else {
      replace(own, h("p", { class: "notice" }, "This credential is not held to any limit."));
    }
    if (!ctx.me.grant.admin) return;
    const listed = await api("GET", "/whoami/keys");
    if (!ctx.alive()) return;
    const blocks = listed.keys.map((k) => {
      const body = h("tbody", {}, ...rows(k.limits));
      return h("section", { class: "key-usage", "data-key": k.name },
        h("h3", {}, shown(k.name)), table(`Limits of ${shown(k.name)}`, HEADERS(), body));
    });
    replace(keys, h("h2", {}, "API keys"),
      ...(blocks.length ? blocks : [h("p", { class: "muted" }, "No API key is held to a limit.")]));
  }

  await load();
  every(REFRESH_MS, ctx.alive, load);
}
