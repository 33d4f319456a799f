// Tiny SVG charts: a sparkline for rates, a two-line chart for lag and pending over time.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function points(values, w, h, max) {
  const n = values.length;
  if (!n) return "";
  const step = n > 1 ? w / (n - 1) : 0;
  return values
    .map((v, i) => `${(i * step).toFixed(1)},${(h - 1 - (max ? (v / max) * (h - 2) : 0)).toFixed(1)}`)
    .join(" ");
}

/** A sparkline of `values` (newest last), with a text alternative. */
export function sparkline(values, label, { width = 96, height = 24 } = {}) {
  const el = svg("svg", {
    class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": label,
  });
  const max = Math.max(1, ...values);
  el.append(svg("polyline", { points: points(values, width, height, max), class: "line-a" }));
  return el;
}

/** Two series over time (e.g. lag and pending), newest last, sharing one scale. */
export function lines(a, b, label, { width = 280, height = 64 } = {}) {
  const el = svg("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img",
    "aria-label": label,
  });
  const max = Math.max(1, ...a, ...b);
  el.append(svg("polyline", { points: points(a, width, height, max), class: "line-a" }));
  el.append(svg("polyline", { points: points(b, width, height, max), class: "line-b" }));
  return el;
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
