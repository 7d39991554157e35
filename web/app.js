/*
 * app.js — the console's shell: signing in (with the organisation's
 * provider when the server offers it — the server keeps the session — or
 * a token from the URL fragment #token=…, read once and removed from the
 * address bar, shown with whose it is and used only once the person says
 * so, or pasted), who you are, a team switcher for people in
 * several teams, the navigation for your role, and a hash router that
 * renders one view at a time into <main>. Views live in their own modules; each
 * marks its root data-ready once its data is on screen.
 */
import * as api from './api.js';
import { h, put, clear, when } from './dom.js';
import { parseHash, problemBox } from './ui.js';
import * as overview from './overview.js';
import * as jobs from './jobs.js';
import * as queues from './queues.js';
import * as costs from './costs.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let me = null; /* /v1/whoami of the current token or session */
let expiryTimer = null;
let generation = 0; /* bumped on every navigation: stale work stops */
let signInMessage = '';
let offered = null; /* a #token= token not yet accepted */

const NAV = {
  member: [['#/', 'Overview'], ['#/jobs', 'Jobs'], ['#/submit', 'Submit'], ['#/queues', 'Queues'], ['#/costs', 'Costs']],
  admin: [['#/', 'Overview'], ['#/jobs', 'Jobs'], ['#/submit', 'Submit'], ['#/queues', 'Queues'], ['#/costs', 'Costs']],
  finance: [['#/', 'Overview'], ['#/costs', 'Costs']],
};

const ROUTES = [
  [/^\/?$/, overview.render],
  [/^\/signin$/, overview.render],
  [/^\/jobs$/, jobs.list],
  [/^\/submit$/, jobs.submit],
  [/^\/teams\/([a-z0-9-]+)\/jobs\/([a-z0-9-]+)$/, jobs.page],
  [/^\/queues$/, queues.render],
  [/^\/teams\/([a-z0-9-]+)\/queues\/([a-z0-9-]+)$/, queues.pending],
  [/^\/costs$/, costs.render],
];

/* A token in the fragment is taken once and removed from the address bar
 * and the history entry, so it is neither bookmarked nor shared. It is not
 * used yet: a link can be anyone's, so the person first sees whose it is. */
function takeFragmentToken() {
  const frag = location.hash.slice(1);
  if (!frag.startsWith('token=')) return;
  const params = new URLSearchParams(frag);
  const t = params.get('token');
  history.replaceState(null, '', `${location.pathname}${location.search}#/`);
  if (t) offered = t;
}

/* Whose the offered token is, and a choice: use it, or not. */
async function confirmToken(gen) {
  const t = offered;
  let probe = { me: null, problem: null };
  try { probe = await api.whoamiOf(t); } catch { /* offline */ }
  if (gen !== generation) return;
  if (!probe.me) {
    offered = null;
    signInMessage = `The link's token was not accepted: ${(probe.problem && (probe.problem.detail || probe.problem.title)) || 'the server cannot be reached'}.`;
    signInView();
    return;
  }
  const m = probe.me;
  const whose = m.email || m.subject || '(no subject)';
  const grants = (m.grants && m.grants.length ? m.grants : [{ role: m.role, team: m.team }])
    .map((g) => (g.team ? `${g.role} of ${g.team}` : g.role)).join(', ');
  generation++;
  clear(who);
  renderNav('');
  put(clear(main), h('section', { 'data-view': 'confirm-token', 'data-ready': '1' },
    h('h1', {}, 'Use the token of this link?'),
    h('p', {}, 'The link you opened carries a token. Use it only if it is yours or you expected it: whatever you do next is done as its owner.'),
    h('dl.card', {},
      h('dt', {}, 'Token of'), h('dd', { id: 'offered-who' }, whose),
      m.issuer ? h('dt', {}, 'Issued by') : null, m.issuer ? h('dd', {}, m.issuer) : null,
      h('dt', {}, 'May act as'), h('dd', { id: 'offered-grants' }, grants),
      h('dt', {}, 'Until'), h('dd', {}, when(new Date(m.exp * 1000).toISOString()))),
    h('p', {},
      h('button', { type: 'button', id: 'use-token', onclick: () => { offered = null; api.setToken(t); me = null; route(); } }, `Use it: sign in as ${whose}`),
      ' ',
      h('button.link', { type: 'button', id: 'reject-token', onclick: () => { offered = null; signInMessage = 'The link\'s token was not used.'; route(); } }, 'Do not use it'))));
  document.title = 'Use this token? · gpugate console';
}

/* The teams the caller is a member of (a provider's principal may have
 * several). */
function memberTeams() {
  return (me.grants || []).filter((g) => g.role === 'member' && g.team).map((g) => g.team);
}

function teamSwitcher() {
  const teams = memberTeams();
  if (me.role !== 'member' || teams.length < 2) return null;
  const select = h('select', {
    id: 'team-switch',
    onchange: () => { me.team = select.value; route(); },
  }, teams.map((t) => h('option', { value: t, selected: t === me.team ? '' : null }, t)));
  return h('span.team-switch', {}, h('label', { for: 'team-switch' }, 'Team '), select);
}

function renderWho() {
  clear(who);
  if (!me) return;
  const exp = new Date(me.exp * 1000);
  const name = me.via === 'session' ? (me.email || me.subject) : null;
  put(who,
    name ? h('span.who-name', { 'data-who': name }, `${name} · `) : null,
    teamSwitcher() || h('span.who-id', { 'data-role': me.role }, me.team ? `${me.team} · ${me.role}` : me.role),
    h('span.muted', {}, ` · until ${when(exp.toISOString())}`),
    ' ',
    h('button.link', { type: 'button', onclick: () => api.logout() }, 'Sign out'),
  );
}

function renderNav(active) {
  clear(nav);
  if (!me) return;
  const items = NAV[me.role] || [];
  put(nav, h('ul', {}, items.map(([href, label]) => {
    const current = href === '#/' ? active === '/' : active.startsWith(href.slice(1));
    return h('li', {}, h('a', { href, 'aria-current': current ? 'page' : null }, label));
  })));
}

function armExpiry() {
  clearTimeout(expiryTimer);
  if (!me) return;
  const ms = me.exp * 1000 - Date.now();
  const what = me.via === 'session' ? 'session' : 'token';
  const msg = `Your ${what} expired at ${when(new Date(me.exp * 1000).toISOString())}. Sign in again.`;
  api.expiresAt(me.exp * 1000, msg);
  if (ms <= 0) {
    api.signOut(msg, { ended: true });
    return;
  }
  expiryTimer = setTimeout(() => api.signOut(msg, { ended: true }), Math.min(ms, 2147483000));
}

function signInView() {
  generation++;
  me = null;
  clearTimeout(expiryTimer);
  renderWho();
  renderNav('');
  const input = h('textarea', {
    id: 'token-input', rows: '4', autocomplete: 'off', spellcheck: 'false', required: true,
    'aria-describedby': 'token-help',
  });
  const form = h('form.card', {
    onsubmit: (ev) => {
      ev.preventDefault();
      if (!input.value.trim()) return;
      api.setToken(input.value);
      signInMessage = '';
      me = null;
      if (location.hash === '#/') route();
      else location.hash = '#/';
    },
  },
  h('label', { for: 'token-input' }, 'Bearer token'),
  input,
  h('p.muted', { id: 'token-help' },
    'Paste a gpugate JWT (for example from `gpugate token --team team-a --role member`), or open a link ending in #token=…. ',
    'It is kept in this tab only (sessionStorage) and sent only to this server.'),
  h('button', { type: 'submit' }, 'Sign in'));
  /* the server names the provider it offers sign-in with, if any */
  const provider = document.querySelector('meta[name="gpugate-sign-in"]');
  put(clear(main), h('section', { 'data-view': 'signin', 'data-ready': '1' },
    h('h1', {}, 'Sign in to gpugate'),
    signInMessage ? h('p.notice', { role: 'status' }, signInMessage) : null,
    provider ? h('p', {}, h('a.button', { href: '/auth/login', id: 'sso' }, `Sign in with ${provider.content}`)) : null,
    provider ? h('p.muted', {}, 'Or, with a gpugate token:') : null,
    form));
  document.title = 'Sign in · gpugate console';
}

async function route() {
  takeFragmentToken();
  const gen = ++generation;
  if (offered) {
    await confirmToken(gen);
    return;
  }
  const { path, params } = parseHash();
  if (!api.token() && !api.inSession()) {
    /* a session the server keeps (the cookie is not readable here) */
    let probe = { me: null, problem: null };
    try { probe = await api.probeSession(); } catch { /* offline: sign in */ }
    if (gen !== generation) return;
    if (!probe.me) {
      if (probe.problem) signInMessage = probe.problem.detail || probe.problem.title;
      signInView();
      return;
    }
    me = probe.me;
    armExpiry();
  }
  try {
    if (!me) {
      me = await api.get('/v1/whoami');
      armExpiry();
      if (!api.token() && !api.inSession()) return; /* expired on arrival */
    }
  } catch (err) {
    if (err.status !== 401) {
      put(clear(main), problemBox(err));
    }
    return;
  }
  if (gen !== generation) return;
  renderWho();
  renderNav(path);
  const found = ROUTES.find(([re]) => re.test(path));
  clear(main);
  if (!found) {
    put(main, h('section', { 'data-view': 'missing', 'data-ready': '1' }, h('h1', {}, 'Not found'),
      h('p', {}, 'This console has no such page. '), h('a', { href: '#/' }, 'Go to the overview')));
    return;
  }
  const match = path.match(found[0]);
  const ctx = {
    me,
    main,
    params,
    args: match.slice(1),
    alive: () => gen === generation && (!!api.token() || api.inSession()),
    /* run f now and every ms while this view is shown and the tab visible */
    poll(f, ms) {
      const tick = async () => {
        if (!ctx.alive()) return;
        if (document.visibilityState === 'visible') {
          try { await f(); } catch { /* shown by f */ }
        }
        if (ctx.alive()) setTimeout(tick, ms);
      };
      setTimeout(tick, ms);
    },
    /*
     * Keep a view current from team's event stream: load() once events
     * arrive (a burst is one reload, at most one in flight), and every
     * fallbackMs by polling only while the stream is down. status (an
     * element) says which. The stream ends with the view.
     */
    live(team, load, fallbackMs, status, filter = () => true) {
      let isLive = false;
      let pending = false;
      let running = false;
      const say = () => {
        status.dataset.live = isLive ? 'on' : 'off';
        status.textContent = isLive
          ? `Live · updated ${new Date().toLocaleTimeString()} as events happen`
          : `Live updates unavailable · refreshing every ${fallbackMs / 1000} s while this tab is visible`;
      };
      const reload = async () => {
        if (running) { pending = true; return; }
        running = true;
        try { await load(); } catch { /* shown by load */ }
        running = false;
        if (pending && ctx.alive()) { pending = false; reload(); }
        say();
      };
      const stop = api.follow(`/v1/teams/${team}/events`, (type, data) => {
        if (!ctx.alive()) { stop(); return; }
        if (filter(type, data)) reload();
      }, (up) => {
        if (!ctx.alive()) { stop(); return; }
        isLive = up;
        say();
        if (up) reload(); /* what happened while it was down */
      });
      say();
      const tick = async () => {
        if (!ctx.alive()) { stop(); return; }
        if (!isLive && document.visibilityState === 'visible') await reload();
        setTimeout(tick, fallbackMs);
      };
      setTimeout(tick, fallbackMs);
    },
  };
  try {
    await found[1](ctx);
  } catch (err) {
    if (!ctx.alive()) return;
    put(clear(main), h('section', { 'data-view': 'error', 'data-ready': '1' }, problemBox(err)));
  }
  main.focus({ preventScroll: true });
}

/* A console session that ended (a session without the provider's refresh
 * token lasts no longer than its ID token) returns through the provider
 * without a page when it can: /auth/login with prompt=none, at most once a
 * minute (the provider answers login_required when the person must sign
 * in, and gpugate then shows the sign-in page). */
const SILENT_KEY = 'gpugate.silentReturn';
function silentReturn() {
  if (!document.querySelector('meta[name="gpugate-sign-in"]')) return false;
  const last = Number(sessionStorage.getItem(SILENT_KEY) || 0);
  if (Date.now() - last < 60000) return false;
  sessionStorage.setItem(SILENT_KEY, String(Date.now()));
  location.assign('/auth/login?prompt=none');
  return true;
}

api.whenSignedOut((reason, sessionEnded) => {
  if (sessionEnded && silentReturn()) return;
  signInMessage = reason || '';
  me = null;
  if (location.hash !== '#/signin') location.hash = '#/signin';
  signInView();
});

window.addEventListener('hashchange', () => {
  if (location.hash === '#/signin' && !api.token() && !api.inSession()) return;
  route();
});
route();
