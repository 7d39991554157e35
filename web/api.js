/*
 * api.js — the console's only way to the server: fetch on /v1 with the
 * user's bearer token (kept in this tab's sessionStorage, never in a
 * cookie, a URL or a log) or, after a sign-in at the organisation's
 * provider, the server's HttpOnly session cookie (never readable here)
 * with the X-GPUGate-CSRF header the server requires of it; problem+json
 * errors as ApiError, 401 → signed out, and conditional GETs
 * (If-None-Match) so that polling an unchanged list costs a 304.
 */

const KEY = 'gpugate.token';
const etags = new Map(); /* path → {etag, data} */
const MAX_CACHED = 200;
let onSignedOut = () => {};
let session = false; /* the session cookie authenticated /v1/whoami */

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export function token() {
  return sessionStorage.getItem(KEY);
}

export function setToken(t) {
  etags.clear();
  sessionStorage.setItem(KEY, t.trim());
}

/* Whether the console's session (not a token) signs the requests. */
export function inSession() {
  return session && !token();
}

/* Forget the token or session and everything fetched with it. ended:
 * the server no longer accepts it (not a sign-out here); the listener is
 * told whether it was the console's session that ended. */
/*
 * When the credential expires and what to say then (app.js sets it from
 * /v1/whoami's exp). A request refused at or after that moment was
 * refused for the expiry, and says so: on a busy page a request can meet
 * the 401 before the expiry's timer fires.
 */
let expiry = { at: Infinity, msg: '' };

export function expiresAt(ms, msg) {
  expiry = { at: ms, msg };
}

/* A 401: signed out, for the expiry if it has come (1 s for clocks that
 * count whole seconds), else with the reason given. */
function refused(reason) {
  signOut(Date.now() >= expiry.at - 1000 ? expiry.msg : reason, { ended: true });
}

export function signOut(reason, { ended = false } = {}) {
  const sessionEnded = ended && inSession();
  expiry = { at: Infinity, msg: '' };
  sessionStorage.removeItem(KEY);
  session = false;
  etags.clear();
  onSignedOut(reason, sessionEnded);
}

/* End the session on the server (every replica), then here. */
export async function logout() {
  if (inSession()) {
    try {
      await fetch('/auth/logout', { method: 'POST', headers: { 'X-GPUGate-CSRF': '1' }, credentials: 'same-origin', cache: 'no-store' });
    } catch { /* signed out here all the same */ }
  }
  signOut('You signed out.');
}

/* /v1/whoami by the session cookie, if there is a live one: the answer,
 * or null (not signed in, or the session matches no access binding: then
 * the problem is in reason). */
export async function probeSession() {
  const r = await fetch('/v1/whoami', { headers: headers({}), cache: 'no-store', credentials: 'same-origin' });
  if (!r.ok) return { me: null, problem: r.status === 403 ? await problemOf(r) : null };
  session = true;
  return { me: await r.json(), problem: null };
}

/* /v1/whoami as the token t would answer it, without using t for anything
 * else: who a #token= link would sign in as, before it is kept. */
export async function whoamiOf(t) {
  const r = await fetch('/v1/whoami', {
    headers: { Accept: 'application/json', Authorization: `Bearer ${t.trim()}` },
    cache: 'no-store', credentials: 'omit',
  });
  if (!r.ok) return { me: null, problem: await problemOf(r) };
  return { me: await r.json(), problem: null };
}

export function whenSignedOut(f) {
  onSignedOut = f;
}

async function problemOf(r) {
  try {
    const p = await r.json();
    if (p && typeof p === 'object') return p;
  } catch { /* not JSON */ }
  return { title: r.statusText || `HTTP ${r.status}`, status: r.status };
}

function headers(extra) {
  const t = token();
  const h = { Accept: 'application/json', ...extra };
  if (t) h.Authorization = `Bearer ${t}`;
  else h['X-GPUGate-CSRF'] = '1'; /* the session cookie's requests */
  return h;
}

/* The session cookie goes only with requests a token does not sign. */
function credentials() {
  return token() ? 'omit' : 'same-origin';
}

/*
 * GET path (JSON). With poll: true the previous answer's ETag is sent and
 * a 304 returns the previous data (same object).
 */
export async function get(path) {
  const cached = etags.get(path);
  const h = headers(cached ? { 'If-None-Match': cached.etag } : {});
  const r = await fetch(path, { headers: h, cache: 'no-store', credentials: credentials() });
  if (r.status === 304 && cached) return cached.data;
  if (r.status === 401) {
    refused('Your session has ended (the server no longer accepts the token). Sign in again.');
    throw new ApiError(401, await problemOf(r));
  }
  if (!r.ok) throw new ApiError(r.status, await problemOf(r));
  const data = await r.json();
  const tag = r.headers.get('ETag');
  if (tag) {
    if (etags.size >= MAX_CACHED) etags.delete(etags.keys().next().value);
    etags.set(path, { etag: tag, data });
  }
  return data;
}

/*
 * Follow an NDJSON stream at path: onItem(object) per line as it comes.
 * Resolves when the server ends the stream; rejects with ApiError on a
 * refusal, or when signal aborts it.
 */
export async function stream(path, onItem, signal) {
  const r = await fetch(path, {
    headers: headers({ Accept: 'application/x-ndjson' }),
    cache: 'no-store',
    credentials: credentials(),
    signal,
  });
  if (r.status === 401) {
    refused('Your session has ended (the server no longer accepts the token). Sign in again.');
    throw new ApiError(401, await problemOf(r));
  }
  if (!r.ok) throw new ApiError(r.status, await problemOf(r));
  const reader = r.body.getReader();
  const text = new TextDecoder();
  let rest = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    rest += text.decode(value, { stream: true });
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (line.trim()) onItem(JSON.parse(line));
    }
  }
}

/* Every page of a list (bounded by maxPages). */
export async function getAll(path, maxPages = 20) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < maxPages; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await get(cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
    items.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return items;
}

/* POST JSON (or nothing); returns the parsed answer. */
export async function post(path, body, extraHeaders = {}) {
  const h = headers(extraHeaders);
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method: 'POST', headers: h, cache: 'no-store', credentials: credentials(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status === 401) {
    refused('Your session has ended. Sign in again.');
    throw new ApiError(401, await problemOf(r));
  }
  if (!r.ok) throw new ApiError(r.status, await problemOf(r));
  return r.status === 204 ? null : r.json();
}

/* GET path as CSV text (Accept: text/csv). */
export async function getCsv(path) {
  const r = await fetch(path, { headers: headers({ Accept: 'text/csv' }), cache: 'no-store', credentials: credentials() });
  if (r.status === 401) {
    refused('Your session has ended. Sign in again.');
    throw new ApiError(401, await problemOf(r));
  }
  if (!r.ok) throw new ApiError(r.status, await problemOf(r));
  return r.text();
}

/* The claims of a token, read without verifying (only to know its expiry
 * before the server answers; the server's /v1/whoami is the authority). */
export function peekExp(t) {
  try {
    const p = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(p)).exp || null;
  } catch {
    return null;
  }
}

/*
 * Follow a Server-Sent Events stream at path (GET /v1/teams/{team}/events)
 * through fetch, so that it carries the same token or session as every
 * other request (EventSource cannot send a header). onEvent(type, data)
 * gets each event's name and parsed data; onState(true | false) says
 * whether the stream is up. After a drop it reconnects with the last
 * event's id as Last-Event-ID (nothing lost or repeated), waiting longer
 * each time up to 30 s. Returns stop().
 */
export function follow(path, onEvent, onState) {
  let stopped = false;
  let last = null;
  let delay = 1000;
  let ctrl = null;
  let up = null;
  const state = (s) => { if (s !== up) { up = s; onState(s); } };
  const dispatch = (block) => {
    let type = 'message';
    let data = '';
    let id = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) type = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (id) last = id;
    if (!data) return; /* a keep-alive comment */
    try { onEvent(type, JSON.parse(data)); } catch { /* not ours to break */ }
  };
  const run = async () => {
    while (!stopped) {
      ctrl = new AbortController();
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (last) h['Last-Event-ID'] = last;
        const r = await fetch(path, { headers: h, cache: 'no-store', credentials: credentials(), signal: ctrl.signal });
        if (r.status === 401) {
          refused('Your session has ended. Sign in again.');
          return;
        }
        if (!r.ok || !r.body) throw new ApiError(r.status, null);
        state(true);
        delay = 1000;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let end;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            dispatch(buf.slice(0, end));
            buf = buf.slice(end + 2);
          }
        }
      } catch { /* down: retried below */ }
      if (stopped) return;
      state(false);
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 30000);
    }
  };
  run();
  return () => { stopped = true; if (ctrl) ctrl.abort(); };
}
