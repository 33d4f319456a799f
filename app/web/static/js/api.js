// The service's public API, as any browser client would call it: /v1 REST with the
// credential as a bearer header, SSE with it as `access_token` (EventSource cannot send
// headers), errors as RFC 9457 problem documents.
//
// Names are bytes (docs/concepts/streams-and-ids.md): in JSON a byte that is not valid UTF-8
// is the escape \udcNN, which JSON.parse and JSON.stringify keep as a lone surrogate; in URLs
// it is %NN. `quote` and `unquote` convert between the two.

const CREDENTIAL = "xstreams.credential";

export const session = {
  get credential() {
    return sessionStorage.getItem(CREDENTIAL);
  },
  set credential(value) {
    if (value) sessionStorage.setItem(CREDENTIAL, value);
    else sessionStorage.removeItem(CREDENTIAL);
  },
};

export class ApiError extends Error {
  constructor(status, problem) {
    // The detail names the stream, group or parameter; a Redis code other than ERR
    // (NOGROUP, BUSYGROUP, NOPERM) is kept beside it, as operators search for it.
    const code = problem?.code && problem.code !== "ERR" && problem?.detail !== problem?.error
      ? ` (${problem.code})` : "";
    const text = problem?.detail ? problem.detail + code : problem?.error || `HTTP ${status}`;
    super(text);
    this.status = status;
    this.problem = problem;
  }
}

const isHigh = (c) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;

/** A name as one URL component: UTF-8 percent-encoded, each escaped byte \udcNN as %NN. */
export function quote(name) {
  let out = "";
  let run = "";
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (isHigh(c) && i + 1 < name.length && isLow(name.charCodeAt(i + 1))) {
      run += name[i] + name[i + 1];
      i++;
    } else if (c >= 0xdc80 && c <= 0xdcff) {
      out += encodeURIComponent(run) + "%" + (c & 0xff).toString(16).toUpperCase().padStart(2, "0");
      run = "";
    } else {
      run += name[i];
    }
  }
  return out + encodeURIComponent(run);
}

/** The reverse of `quote`: bytes that are not valid UTF-8 come back as \udcNN (PEP 383). */
export function unquote(text) {
  const bytes = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < text.length; ) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "%" && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 3;
    } else {
      const ch = String.fromCodePoint(text.codePointAt(i));
      bytes.push(...encoder.encode(ch));
      i += ch.length;
    }
  }
  return decodeEscaped(bytes);
}

function decodeEscaped(b) {
  let out = "";
  let i = 0;
  const escape = (x) => String.fromCharCode(0xdc00 + x);
  while (i < b.length) {
    const x = b[i];
    let n, cp, min;
    if (x < 0x80) {
      out += String.fromCharCode(x);
      i++;
      continue;
    } else if (x >= 0xc2 && x <= 0xdf) [n, cp, min] = [1, x & 0x1f, 0x80];
    else if (x >= 0xe0 && x <= 0xef) [n, cp, min] = [2, x & 0x0f, 0x800];
    else if (x >= 0xf0 && x <= 0xf4) [n, cp, min] = [3, x & 0x07, 0x10000];
    else {
      out += escape(x);
      i++;
      continue;
    }
    let ok = i + n < b.length;
    for (let k = 1; ok && k <= n; k++) {
      const y = b[i + k];
      ok = y >= 0x80 && y <= 0xbf;
      cp = (cp << 6) | (y & 0x3f);
    }
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (ok) {
      out += String.fromCodePoint(cp);
      i += n + 1;
    } else {
      out += escape(x);
      i++;
    }
  }
  return out;
}

function queryString(query) {
  const parts = [];
  for (const [k, v] of Object.entries(query || {})) {
    if (v === undefined || v === null || v === "") continue;
    for (const item of Array.isArray(v) ? v : [v]) parts.push(`${k}=${quote(String(item))}`);
  }
  return parts.length ? "?" + parts.join("&") : "";
}

/** Listeners told when the credential stops working (401), so the page asks to sign in. */
export const unauthorized = new EventTarget();

/** One /v1 request; the parsed JSON body (null for 204), or an ApiError with the problem. */
export async function api(method, path, { query, body, credential } = {}) {
  const headers = { Accept: "application/json" };
  const token = credential === undefined ? session.credential : credential;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch("/v1" + path + queryString(query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, { detail: `The service cannot be reached (${e.message}).` });
  }
  if (response.status === 204) return null;
  let doc = null;
  try {
    doc = JSON.parse(await response.text());
  } catch {
    doc = null;
  }
  if (!response.ok) {
    if (response.status === 401 && credential === undefined) {
      unauthorized.dispatchEvent(new Event("unauthorized"));
    }
    throw new ApiError(response.status, doc);
  }
  return doc;
}

/** An EventSource on a /v1 event stream, carrying the credential in the query. */
export function events(path, query = {}) {
  const token = session.credential;
  const q = token ? { ...query, access_token: token } : query;
  return new EventSource("/v1" + path + queryString(q));
}

export const streamPath = (name) => `/streams/${quote(name)}`;
export const groupPath = (stream, group) => `${streamPath(stream)}/groups/${quote(group)}`;

/** The caller's principal and what it may do on `streams` (GET /v1/whoami). */
export function whoami(streams = [], credential) {
  return api("GET", "/whoami", { query: { stream: streams }, credential });
}

/** An entry ID's time: its first part is milliseconds since the epoch. */
export const idTime = (id) => (id ? Number(id.split("-")[0]) : null);
