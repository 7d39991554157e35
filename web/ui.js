/*
 * ui.js — what every view shares with the shell: the view's address (path
 * and query in the URL fragment, so any screen is a link) and how an API
 * problem is shown (its title and detail, never a blank page).
 */
import { h } from './dom.js';

export function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  return { path: path || '/', params };
}

/* Change the query of the current view (filters, pages) as a new link. */
export function setParams(params) {
  const { path } = parseHash();
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') s.set(k, v);
  const qs = s.toString();
  location.hash = `#${path}${qs ? `?${qs}` : ''}`;
}

/* A problem document (or any error) shown as its title and detail. */
export function problemBox(err) {
  const p = (err && err.problem) || {};
  const status = err && err.status;
  const title = status === 404 ? 'Not found' : p.title || 'Something went wrong';
  const kids = [h('h2', {}, title)];
  if (p.detail || err.message) kids.push(h('p', {}, p.detail || err.message));
  if (Array.isArray(p.errors)) {
    kids.push(h('ul', {}, p.errors.map((e) => h('li', {}, h('code', {}, e.field), ` ${e.message}`))));
  }
  if (status) kids.push(h('p.muted', {}, `HTTP ${status}${p.type ? ` · ${p.type}` : ''}`));
  return h('div.problem', { role: 'alert', dataset: { status: status || '' } }, kids);
}

