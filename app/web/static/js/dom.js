// Small DOM helpers. Every value from the service goes in as text (textContent, attribute
// values), never as markup.

/** h("a", {href: "#/"}, "text", child...): an element; `on*` attributes become listeners. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A name as shown: each byte that is not UTF-8 (\udcNN) as \xNN, visibly. */
export function shown(name) {
  return String(name).replace(/[\udc80-\udcff]/g, (c) => {
    return "\\x" + (c.charCodeAt(0) & 0xff).toString(16).padStart(2, "0");
  });
}

/** A name or an ID as shown: one element holding it whole, its full text also in `title`. It
 * may wrap only after a separator (- : . _ /), where a <wbr> goes, never inside a word; a part
 * still too long for its box is ellipsised (app.css, `.name`). */
export function name(text) {
  const full = shown(text);
  const el = h("span", { class: "name", title: full });
  for (const part of full.split(/(?<=[-:._/])/)) el.append(part, document.createElement("wbr"));
  return el;
}

export function when(ms) {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function ago(ms) {
  if (ms === null || ms === undefined) return "—";
  return duration(Date.now() - ms) + " ago";
}

export function duration(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

// Counts beyond 2^53 (XNACK FATAL leaves a delivery count of 2^63-1) are grouped exactly, by BigInt.
export const number = (n) => {
  if (n === null || n === undefined) return "—";
  if (typeof n === "string" && /^-?\d{16,}$/.test(n)) return BigInt(n).toLocaleString("en");
  return Number(n).toLocaleString("en");
};

/** A status line: role=status for news, role=alert for errors (read out by screen readers). */
export function notice(el, text, kind = "ok") {
  el.className = `notice ${kind}`;
  el.setAttribute("role", kind === "error" ? "alert" : "status");
  el.textContent = text;
  el.hidden = !text;
}

/** Ask before something that cannot be undone; resolves true when confirmed. */
export function confirmAction(title, text, ok = "Confirm") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    document.getElementById("confirm-ok").focus();
  });
}

export const dialogOpen = () => document.getElementById("confirm").open;

/** A labelled form control: <label>text <input></label>. */
export function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", {}, label), control, hint ? h("small", {}, hint) : null);
}

/** A table in a frame. On a narrow screen (app.css) each row is stacked as "label: value"
 * lines, so every body cell carries its column's header text as `data-label`, kept up to date
 * as rows come and go (none for a column whose header is for screen readers only). */
export function table(caption, headers, body) {
  const head = h("tr", {}, headers);
  const label = () => {
    const labels = [...head.cells].map((c) => (c.querySelector(".visually-hidden") ? "" : c.textContent.trim()));
    for (const tr of body.rows) {
      [...tr.cells].forEach((c, i) => {
        if (c.colSpan === 1 && labels[i] && c.dataset.label !== labels[i]) c.dataset.label = labels[i];
      });
    }
  };
  new MutationObserver(label).observe(body, { childList: true });
  label();
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h("table", {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, head),
      body));
}

/** Run `fn` every `ms` while `alive()`; the timer stops itself when the page changed. */
export function every(ms, alive, fn) {
  const tick = async () => {
    if (!alive()) return;
    try {
      await fn();
    } finally {
      if (alive()) setTimeout(tick, ms);
    }
  };
  setTimeout(tick, ms);
}
