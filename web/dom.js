/*
 * dom.js — small DOM and formatting helpers for the console. Text always
 * goes in with textContent (job names and labels are user input), never as
 * HTML; styles only through classes or the CSSOM (the CSP forbids style
 * attributes).
 */

/* h('tag.class', {attr: v, onclick: f}, ...children) → Element. Children
 * may be strings, numbers, nodes, arrays, null or false (skipped). */
export function h(spec, attrs, ...kids) {
  const [tag, ...classes] = spec.split('.');
  const svg = ['svg', 'rect', 'line', 'g', 'title', 'text'].includes(tag);
  const el = svg
    ? document.createElementNS('http://www.w3.org/2000/svg', tag)
    : document.createElement(tag);
  if (classes.length) el.setAttribute('class', classes.join(' '));
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'class') el.setAttribute('class', [el.getAttribute('class'), v].filter(Boolean).join(' '));
    else if (k === 'value' && !svg) el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else if (k instanceof Node) el.appendChild(k);
    else el.appendChild(document.createTextNode(String(k)));
  }
}

/* Append children as h() takes them (arrays flattened, null skipped). */
export function put(el, ...kids) {
  append(el, kids);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/* Money with its currency, in the user's locale: "$1,234.56". Amounts may
 * come as numbers or decimal strings. */
export function money(amount, currency = 'USD') {
  if (amount === null || amount === undefined || amount === '') return '—';
  const n = Number(amount);
  if (!Number.isFinite(n)) return String(amount);
  try {
    return new Intl.NumberFormat(undefined, {
      style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2,
    }).format(n);
  } catch {
    return `${n.toFixed(2)} ${currency}`;
  }
}

/* Cents of an amount as an integer, for exact comparisons. */
export function cents(amount) {
  return Math.round(Number(amount) * 100);
}

export function num(n) {
  return n === null || n === undefined ? '—' : new Intl.NumberFormat().format(n);
}

/* A timestamp in the user's time zone. */
export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

/* "3 min", "2 h 5 min", "4 d" since iso (or between iso and until). */
export function age(iso, until) {
  if (!iso) return '—';
  const s = Math.max(0, Math.round(((until ? new Date(until) : new Date()) - new Date(iso)) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/* <time> with the local rendering, the exact instant in its title. */
export function timeEl(iso, text) {
  return h('time', { datetime: iso || '', title: iso ? new Date(iso).toString() : '' }, text ?? when(iso));
}

/* Today and the first of the month as YYYY-MM-DD, in UTC (report days are
 * UTC days). */
export function utcDay(d = new Date()) {
  return d.toISOString().slice(0, 10);
}
export function monthStart(d = new Date()) {
  return `${d.toISOString().slice(0, 7)}-01`;
}

/* A scrolling table wrapper that keyboard users can focus. */
export function tableBox(label, table) {
  return h('div.table-box', { tabindex: '0', role: 'region', 'aria-label': label }, table);
}

/* A state chip: colour by state, the state's name as text. */
export function stateChip(state) {
  return h(`span.chip.st-${(state || 'none').toLowerCase()}`, { dataset: { state: state || '' } }, state || '—');
}
