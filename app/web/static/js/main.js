// The shell: sign-in, the hash router, navigation. Pages live in pages/*.js, each a
// `render(main, ctx)` that builds its view and registers what to stop when it is left.
//
// Routes (names quoted as in URLs, so any bytes round-trip):
//   #/                               streams (#/?match=glob)
//   #/s/{stream}                     one stream: entries, live tail, append, trim
//   #/s/{stream}/groups              its consumer groups and consumers
//   #/s/{stream}/groups/{group}/pending   a group's pending entries
//   #/s/{stream}/dead                a dead-letter stream's entries, with redrive
//   #/usage                          the credential's limits and usage (the admin: every key's)

import { ApiError, quote as quoteHash, session, unauthorized, unquote, whoami } from "./api.js";
import { h, notice, replace, shown } from "./dom.js";
import * as streamsPage from "./pages/streams.js";
import * as streamPage from "./pages/stream.js";
import * as groupsPage from "./pages/groups.js";
import * as pendingPage from "./pages/pending.js";
import * as deadPage from "./pages/dead.js";
import * as usagePage from "./pages/usage.js";

const main = document.getElementById("main");
let me = null; // the signed-in principal (GET /v1/whoami)
let generation = 0;
let leaving = [];

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = hash.split("?");
  const query = new URLSearchParams(search);
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "usage" && parts.length === 1) return { page: usagePage, params: {}, query };
  if (parts[0] === "s" && parts.length >= 2) {
    const stream = unquote(parts[1]);
    if (parts.length === 2) return { page: streamPage, params: { stream }, query };
    if (parts[2] === "groups" && parts.length === 3) return { page: groupsPage, params: { stream }, query };
    if (parts[2] === "dead" && parts.length === 3) return { page: deadPage, params: { stream }, query };
    if (parts[2] === "groups" && parts[4] === "pending") {
      return { page: pendingPage, params: { stream, group: unquote(parts[3]) }, query };
    }
  }
  return { page: streamsPage, params: {}, query };
}

function nav(current) {
  const { page, params } = current;
  const links = [
    h("a", { href: "#/", "aria-current": page === streamsPage ? "page" : null }, "Streams"),
    h("a", { href: "#/usage", "aria-current": page === usagePage ? "page" : null }, "Usage"),
  ];
  if (params.stream !== undefined) {
    const s = quoteHash(params.stream);
    links.push(
      h("a", { href: `#/s/${s}`, "aria-current": page === streamPage ? "page" : null }, "Stream"),
      h("a", { href: `#/s/${s}/groups`, "aria-current": page === groupsPage ? "page" : null }, "Groups"),
    );
    if (page === deadPage) links.push(h("a", { href: location.hash, "aria-current": "page" }, "Dead letters"));
    if (params.group !== undefined) {
      links.push(h("a", { href: location.hash, "aria-current": "page" }, "Pending"));
    }
  }
  replace(document.getElementById("nav"), links);
}

function who() {
  const el = document.getElementById("who");
  if (!me) return replace(el);
  const label = me.kind === "open" ? "open service (no credentials configured)" : `${shown(me.name)} (${me.kind})`;
  const out = session.credential
    ? h("button", { type: "button", class: "secondary small", onclick: signOut }, "Sign out")
    : null;
  replace(el, h("span", { class: "muted" }, label), out);
}

function signOut() {
  session.credential = null;
  me = null;
  show();
}

async function show() {
  for (const stop of leaving) stop();
  leaving = [];
  const mine = ++generation;
  if (!me) {
    try {
      me = await whoami([]);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 401) {
        replace(main, h("p", { class: "notice error", role: "alert" }, e.message));
        return;
      }
      signIn(e.status === 401 && session.credential ? "That credential is not valid now." : "");
      return;
    }
  }
  who();
  const current = route();
  nav(current);
  const ctx = {
    me,
    params: current.params,
    query: current.query,
    alive: () => mine === generation,
    onLeave: (fn) => leaving.push(fn),
  };
  replace(main);
  try {
    await current.page.render(main, ctx);
  } catch (e) {
    if (mine === generation) main.append(h("p", { class: "notice error", role: "alert" }, e.message));
  }
}

function signIn(message) {
  me = null;
  who();
  replace(document.getElementById("nav"));
  const input = h("input", {
    type: "password", id: "credential", name: "credential", autocomplete: "off", required: true,
    placeholder: "xs_… or a JWT", spellcheck: "false",
  });
  const status = h("p", { hidden: true });
  const form = h("form", { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in"),
    h("p", {}, "Use an API key (", h("code", {}, "xstreams keys create"), ") or a JWT your application minted. " +
      "It is kept for this tab only, and the dashboard shows what it may do."),
    h("label", { class: "field" }, h("span", {}, "API key or JWT"), input),
    status,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const credential = input.value.trim();
    try {
      me = await whoami([], credential);
      session.credential = credential;
      show();
    } catch (e) {
      notice(status, e.status === 401
        ? "That credential is not valid: unknown, revoked or expired."
        : e.message, "error");
    }
  });
  replace(main, form);
  if (message) notice(status, message, "error");
  input.focus();
}

unauthorized.addEventListener("unauthorized", () => {
  if (me) signIn("The service refused the credential (revoked or expired?): sign in again.");
});
window.addEventListener("hashchange", show);
show();
