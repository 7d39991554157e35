/*
 * queues.js — the Queues views: every cluster queue the user may see,
 * grouped by cohort, with usage against nominal quota per flavor and
 * resource as stacked bars (own quota, borrowed from the cohort, a marker
 * at nominal, the width up to nominal + borrowing limit), pending and
 * admitted counts and the stop policy; and a team queue's pending jobs in
 * admission order with positions and the reason each waits.
 */
import * as api from './api.js';
import { h, put, clear, num, age, timeEl, tableBox, stateChip } from './dom.js';
import { reasonWords } from './words.js';
import { setParams, problemBox } from './ui.js';

const RES_ORDER = { gpu: 0, cpu_milli: 1, memory_mib: 2 };

/* A resource amount in the unit people read. */
function amount(resource, v) {
  if (v === null || v === undefined) return 'unlimited';
  if (resource === 'cpu_milli') return `${num(v / 1000)} CPU`;
  if (resource === 'memory_mib') return `${num(Math.round((v / 1024) * 10) / 10)} GiB`;
  return `${num(v)} GPU`;
}

function lendingLimit(cq, flavor, resource) {
  const f = (cq.flavors || []).find((x) => x.name === flavor);
  const r = f && f.resources && f.resources[resource];
  return r && r.lending_limit !== undefined ? r.lending_limit : null;
}

/* One usage bar. Width: nominal + borrowing limit (or the larger of
 * nominal and usage when borrowing is unlimited). */
export function usageBar(cqName, u, lend) {
  const unlimited = u.borrowing_limit === null || u.borrowing_limit === undefined;
  const ceiling = Math.max(unlimited ? Math.max(u.nominal, u.total) : u.nominal + u.borrowing_limit, u.total, 1);
  const own = Math.min(u.total, u.nominal);
  const borrowed = Math.max(0, u.total - u.nominal);
  const label = `${u.flavor} ${u.resource}: ${u.total} used of ${u.nominal} nominal, ${borrowed} borrowed, borrowing limit ${unlimited ? 'unlimited' : u.borrowing_limit}${lend !== null ? `, lending limit ${lend}` : ''}`;
  const pct = (x) => `${Math.min(100, (x / ceiling) * 100)}%`;
  const segOwn = h('span.seg.own');
  segOwn.style.width = pct(own);
  const segBorrowed = h('span.seg.borrowed');
  segBorrowed.style.width = pct(borrowed);
  const marker = h('span.nominal-mark');
  marker.style.left = pct(u.nominal);
  const bar = h('div.bar', {
    role: 'img',
    'aria-label': label,
    title: label,
    dataset: {
      cq: cqName, flavor: u.flavor, resource: u.resource, total: u.total, nominal: u.nominal,
      borrowed, borrowingLimit: unlimited ? 'unlimited' : u.borrowing_limit,
    },
  }, segOwn, segBorrowed, u.nominal > 0 ? marker : null);
  if (u.total > (unlimited ? Infinity : u.nominal + u.borrowing_limit)) bar.classList.add('over');
  return h('div.usage-row', {},
    h('span.usage-name', {}, `${u.flavor} · ${u.resource === 'gpu' ? 'GPU' : u.resource === 'cpu_milli' ? 'CPU' : 'memory'}`),
    bar,
    h('span.usage-text', {}, `${amount(u.resource, u.total)} of ${amount(u.resource, u.nominal)}`,
      borrowed > 0 ? h('span.borrow-note', {}, ` (+${amount(u.resource, borrowed)} borrowed)`) : null,
      lend !== null ? h('small.muted', {}, ` · lends ≤ ${amount(u.resource, lend)}`) : null));
}

function cqCard(cq, linkQueues) {
  const st = cq.status || { usage: [], pending: 0, admitted: 0, weighted_share: 0 };
  const usage = [...st.usage].sort((a, b) => (RES_ORDER[a.resource] - RES_ORDER[b.resource]) || 0);
  const stop = cq.stop_policy || 'None';
  return h('article.card.cq', { 'data-cq': cq.name },
    h('h3', {}, cq.name, stop !== 'None' ? h('span.badge.warn', {}, ` stopped: ${stop}`) : null),
    h('p.muted', {},
      `${cq.queueing_strategy || 'BestEffortFIFO'} · `,
      h('span', { 'data-pending': st.pending }, `${num(st.pending)} pending`), ' · ',
      h('span', { 'data-admitted': st.admitted }, `${num(st.admitted)} admitted`),
      ` · weighted share ${Number(st.weighted_share || 0).toFixed(2)} · stop policy ${stop}`),
    usage.map((u) => usageBar(cq.name, u, lendingLimit(cq, u.flavor, u.resource))),
    linkQueues && cq.team_queues && cq.team_queues.length
      ? h('p', {}, 'Your queues here: ', cq.team_queues.map((q, i) => [i ? ', ' : '', h('a', { href: `#/teams/${linkQueues}/queues/${q}` }, q)]))
      : null);
}

function cohortSection(name, cqs, linkQueues) {
  /* Σ GPUs used and nominal per flavor across the cohort */
  const sums = {};
  for (const cq of cqs) {
    for (const u of (cq.status && cq.status.usage) || []) {
      if (u.resource !== 'gpu') continue;
      const s = sums[u.flavor] || (sums[u.flavor] = { total: 0, nominal: 0 });
      s.total += u.total;
      s.nominal += u.nominal;
    }
  }
  return h('section.cohort', { 'data-cohort': name || '' },
    h('h2', {}, name ? `Cohort ${name}` : 'Without a cohort'),
    Object.keys(sums).length ? h('p.muted', {}, 'GPUs in use of nominal: ',
      Object.entries(sums).map(([f, s], i) => [i ? ' · ' : '', `${f} ${num(s.total)} / ${num(s.nominal)}`])) : null,
    h('div.cq-grid', {}, cqs.map((cq) => cqCard(cq, linkQueues))));
}

export function groupByCohort(cqs) {
  const groups = new Map();
  for (const cq of [...cqs].sort((a, b) => a.name.localeCompare(b.name))) {
    const k = cq.cohort || '';
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(cq);
  }
  return [...groups.entries()].sort((a, b) => (a[0] === '') - (b[0] === '') || a[0].localeCompare(b[0]));
}

/* Fair share over time: a team queue's decayed usage (GPU-hours, and
 * CPU- and GiB-hours when used) and its score; dashes when its cluster
 * queue does not order by usage. */
export function fairShareCells(fs) {
  if (!fs) return [h('td.num', {}, '—'), h('td.num', {}, '—')];
  const u = fs.usage || {};
  const parts = [`${num(Math.round((u.gpu || 0) / 36) / 100)} GPU-h`];
  if (u.cpu) parts.push(`${num(Math.round(u.cpu / 36) / 100)} CPU-h`);
  if (u.memory) parts.push(`${num(Math.round(u.memory / 36) / 100)} GiB-h`);
  return [
    h('td.num', { 'data-fs-usage': String(u.gpu || 0) }, parts.join(' · ')),
    h('td.num', { 'data-fs-score': String(fs.score) }, num(Math.round(fs.score * 10) / 10)),
  ];
}

async function teamQueuesSection(ctx, team, admin) {
  const box = h('section', { 'aria-labelledby': 'tq-h' });
  put(box, h('h2', { id: 'tq-h' }, 'Team queues'));
  if (admin) {
    const teams = await api.getAll('/v1/teams?limit=500', 5);
    put(box, h('form.filters', { onsubmit: (e) => e.preventDefault() }, h('div.field', {},
      h('label', { for: 'q-team' }, 'Team'),
      h('select', { id: 'q-team', onchange: (e) => setParams({ team: e.target.value }) },
        h('option', { value: '' }, 'choose a team'),
        teams.map((t) => h('option', { value: t.name, selected: t.name === team }, t.name))))));
  }
  if (!team) return box;
  const queues = await api.getAll(`/v1/teams/${team}/queues?limit=500`, 2);
  put(box, tableBox(`Queues of ${team}`, h('table.data', {},
    h('thead', {}, h('tr', {}, ['Queue', 'Cluster queue', 'Pending', 'Admitted', 'Fair-share usage', 'Score'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, queues.map((q) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: `#/teams/${team}/queues/${q.name}` }, q.name)),
      h('td', {}, q.cluster_queue),
      h('td.num', {}, num(q.status && q.status.pending)),
      h('td.num', {}, num(q.status && q.status.admitted)),
      fairShareCells(q.fair_sharing)))))));
  return box;
}

export async function render(ctx) {
  const { me, params } = ctx;
  const admin = me.role === 'admin';
  const section = h('section', { 'data-view': 'queues' });
  put(clear(ctx.main), section);
  let cqs;
  const team = admin ? params.get('team') || '' : me.team;
  if (admin) cqs = await api.getAll('/v1/cluster-queues?limit=500', 10);
  else cqs = (await api.get(`/v1/teams/${me.team}/cluster-queues`)).items;
  put(section, 
    h('h1', {}, admin ? 'Cluster queues' : `Capacity behind ${me.team}'s queues`),
    h('p.muted', {}, 'Each bar: quota in use (dark), borrowed from the cohort (striped), a tick at the nominal quota; the bar ends at nominal + borrowing limit.'),
    groupByCohort(cqs).map(([name, list]) => cohortSection(name, list, admin ? null : me.team)),
    await teamQueuesSection(ctx, team, admin));
  section.dataset.ready = '1';
}

/* ---- a team queue's pending jobs ----------------------------------------- */

export async function pending(ctx) {
  const [team, queue] = ctx.args;
  const section = h('section', { 'data-view': 'pending' });
  put(clear(ctx.main), section);
  const cursor = ctx.params.get('cursor');
  const holder = h('div');
  let q;
  try {
    q = await api.get(`/v1/teams/${team}/queues/${queue}`);
  } catch (err) {
    put(section, problemBox(err));
    section.dataset.ready = '1';
    return;
  }
  put(section, 
    h('p', {}, h('a', { href: '#/queues' }, '← Queues')),
    h('h1', {}, `Queue ${team}/${queue}`),
    h('p.muted', {}, `Points to cluster queue ${q.cluster_queue} · ${num(q.status && q.status.pending)} pending · ${num(q.status && q.status.admitted)} admitted. Jobs in admission order: priority, then submission time. Positions may lag one admission cycle.`),
    holder);
  let last = null;
  const load = async () => {
    let page;
    try {
      page = await api.get(`/v1/teams/${team}/queues/${queue}/pending?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    } catch (err) {
      put(clear(holder), problemBox(err));
      section.dataset.ready = '1';
      return;
    }
    if (page === last) return;
    last = page;
    put(clear(holder), tableBox('Pending jobs', h('table.data', {},
      h('thead', {}, h('tr', {}, ['In queue', 'In cluster queue', 'Job', 'GPUs', 'Priority', 'Waiting', 'Ahead', 'Why'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, page.items.length ? page.items.map((j) => h('tr', { dataset: { jobId: j.id } },
        h('td.num', {}, num(j.position_in_queue)),
        h('td.num', {}, num(j.position_in_cluster_queue)),
        h('th', { scope: 'row' }, h('a', { href: `#/teams/${team}/jobs/${j.id}` }, j.name), ' ', stateChip(j.state)),
        h('td.num', {}, num(j.request && j.request.gpu)),
        h('td', {}, `${j.priority_class} (${j.priority})`),
        h('td', {}, timeEl(j.created_at, age(j.created_at))),
        h('td', {}, j.ahead ? `${num(j.ahead.jobs)} jobs, ${num(j.ahead.gpus)} GPU` : '—'),
        h('td', {}, reasonWords(j.reason) || '—')))
        : h('tr', {}, h('td.empty', { colspan: '8' }, 'Nothing is waiting in this queue.'))))),
    page.next_cursor ? h('p', {}, h('a.button.secondary', { href: '#', onclick: (e) => { e.preventDefault(); setParams({ cursor: page.next_cursor }); } }, 'More »')) : null);
    section.dataset.ready = '1';
  };
  await load();
  ctx.poll(load, 3000);
}
