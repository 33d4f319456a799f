// Tiny SVG charts: a sparkline for rates (in a table cell, its unit in the column's header), a
// two-line chart with labelled axes for lag and pending over time.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

/** Polyline points: value i at x0 + i × step, 0 at the bottom and `max` at the top. */
function points(values, h, max, step, x0 = 0) {
  return values
    .map((v, i) => `${(x0 + i * step).toFixed(1)},${(h - 1 - (max ? (v / max) * (h - 2) : 0)).toFixed(1)}`)
    .join(" ");
}

/** A sparkline of `values` (newest last), with a text alternative. */
export function sparkline(values, label, { width = 96, height = 24 } = {}) {
  const el = svg("svg", {
    class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": label,
  });
  const max = Math.max(1, ...values);
  // Too small for axes: its unit is its column's header; a hover tells its scale.
  const title = svg("title", {});
  title.textContent = `${label}; top of the line: ${max.toFixed(1)}, over ${values.length} samples`;
  el.append(title);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  el.append(svg("polyline", { points: points(values, height, max, step), class: "line-a" }));
  return el;
}

/** The smallest 1, 2 or 5 × 10^k at or above `n`: a round top for a y axis. */
function niceMax(n) {
  const step = 10 ** Math.floor(Math.log10(Math.max(1, n)));
  return [1, 2, 5, 10].map((m) => m * step).find((v) => v >= n);
}

function text(tag, cls, content) {
  const el = document.createElement(tag);
  el.className = cls;
  el.textContent = content;
  return el;
}

/** Two series over time (e.g. lag and pending), newest last at the right edge, sharing one
 * scale, with axes in words: `unit` over the y ticks (0 and a round top), the time axis from
 * `seconds` ago (one sample a second, `samples` kept) to now. */
export function lines(a, b, label, { unit = "entries", samples = 90, seconds = 90, width = 280, height = 72 } = {}) {
  const plot = svg("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img",
    "aria-label": label,
  });
  const max = niceMax(Math.max(1, ...a, ...b));
  const step = width / Math.max(1, samples - 1);
  const place = (values) => points(values, height, max, step, width - step * (values.length - 1));
  plot.append(svg("polyline", { points: place(a), class: "line-a" }));
  plot.append(svg("polyline", { points: place(b), class: "line-b" }));
  const yTicks = text("div", "y-ticks", "");
  yTicks.setAttribute("aria-hidden", "true");
  yTicks.append(text("span", "", max.toLocaleString("en")), text("span", "", "0"));
  const xTicks = text("div", "x-ticks", "");
  xTicks.setAttribute("aria-hidden", "true");
  for (const s of [seconds, (seconds * 2) / 3, seconds / 3, 0]) {
    const tick = text("span", "", s ? `${Math.round(s)} s ago` : "now");
    tick.style.left = `${100 - (s / seconds) * 100}%`; // CSSOM, which the CSP allows
    xTicks.append(tick);
  }
  const figure = text("figure", "chart-frame", "");
  figure.append(text("div", "y-unit", unit), yTicks, plot, xTicks, text("div", "x-unit", "time"));
  return figure;
}

/** A bounded history of samples per name (rates, lag, pending), kept across refreshes. */
export class History {
  constructor(size = 60) {
    this.size = size;
    this.series = new Map();
  }

  push(name, value) {
    let s = this.series.get(name);
    if (!s) this.series.set(name, (s = []));
    s.push(value);
    if (s.length > this.size) s.shift();
    return s;
  }

  get(name) {
    return this.series.get(name) || [];
  }
}
