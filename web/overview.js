/*
 * overview.js — the landing view, by role. A member: the team's jobs by
 * state, the head of each queue with why it waits, and the budget strip,
 * redrawn as the team's event stream reports changes.
 * An administrator: GPUs in use against nominal quota per flavor, and the
 * cluster queues that are starved or saturated. Finance: month-to-date
 * spend per team against budget.
 */
import * as api from './api.js';
import { h, put, clear, money, num, age, stateChip, tableBox, utcDay, monthStart } from './dom.js';
import { reasonWords, ALL_STATES } from './words.js';

const REFRESH_MS = 10000;

async function member(ctx, section) {
  const team = ctx.me.team;
  const monthQ = `from=${monthStart()}&to=${utcDay()}`;
  const [summary, queues, costs] = await Promise.all([
    api.get(`/v1/teams/${team}/jobs/summary`),
    api.getAll(`/v1/teams/${team}/queues?limit=500`, 2),
    api.get(`/v1/teams/${team}/costs?${monthQ}`).catch(() => null),
  ]);
  const heads = await Promise.all(queues.map((q) => api.get(`/v1/teams/${team}/queues/${q.name}/pending?limit=1`)
    .then((p) => ({ queue: q, job: p.items[0] })).catch(() => ({ queue: q, job: null }))));
  const b = costs && costs.budget;
  const fair = await fairShareLine(team, queues, heads);
  put(clear(section), 
    h('h1', {}, `Team ${team}`),
    h('h2', {}, 'Jobs by state'),
    h('ul.counts', { 'aria-label': 'Jobs by state' }, ALL_STATES.map((s) => h('li', {},
      h('a', { href: `#/jobs?state=${s}` }, stateChip(s), h('span.count', { dataset: { state: s } }, ` ${num(summary.totals[s].jobs)}`),
        h('small.muted', {}, ` · ${num(summary.totals[s].gpus)} GPU`))))),
    h('h2', {}, 'Next in each queue'),
    tableBox('Next in each queue', h('table.data', {},
      h('thead', {}, h('tr', {}, ['Queue', 'Pending', 'Admitted', 'Next job', 'Waiting', 'Why'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, heads.map(({ queue, job }) => h('tr', {},
        h('th', { scope: 'row' }, h('a', { href: `#/teams/${team}/queues/${queue.name}` }, queue.name)),
        h('td.num', {}, num(queue.status && queue.status.pending)),
        h('td.num', {}, num(queue.status && queue.status.admitted)),
        h('td', {}, job ? h('a', { href: `#/teams/${team}/jobs/${job.id}` }, job.name) : '—'),
        h('td', {}, job ? age(job.created_at) : '—'),
        h('td', {}, job ? reasonWords(job.reason) || '—' : 'nothing waiting')))))),
    h('h2', {}, 'Budget this month'),
    b && b.monthly_budget_usd !== null && b.monthly_budget_usd !== undefined
      ? h('p.budget-strip', { 'data-over': b.over_budget ? '1' : '0' },
        `${money(b.month_to_date_net_usd)} spent of ${money(b.monthly_budget_usd)}; committed by admitted jobs ${money(b.committed_estimate_usd)}; forecast ${money(b.forecast_usd)}; policy ${b.budget_policy}`,
        b.over_budget ? h('span.badge.bad', {}, ' over budget') : null,
        b.budget_policy === 'hold' ? h('small.muted', {}, ' (with "hold", new admissions wait once the budget is reached)') : null)
      : h('p.muted', {}, 'The team has no monthly budget.'),
    fair);
}

/* Fair share over time, when one of the team's queues orders by usage:
 * what the team used (decayed GPU-seconds, as GPU-hours) and how many
 * team queues rank ahead of its waiting jobs (their status says so). */
async function fairShareLine(team, queues, heads) {
  const fs = queues.filter((q) => q.fair_sharing);
  if (!fs.length) return null;
  const gpuH = fs.reduce((s, q) => s + ((q.fair_sharing.usage && q.fair_sharing.usage.gpu) || 0), 0) / 3600;
  const waiting = heads.filter(({ queue, job }) => queue.fair_sharing && job);
  const ranks = await Promise.all(waiting.map(({ job }) => api.get(`/v1/teams/${team}/jobs/${job.id}`)
    .then((j) => (j.fair_share ? j.fair_share.rank - 1 : 0)).catch(() => 0)));
  const ahead = ranks.reduce((m, r) => Math.max(m, r), 0);
  return [h('h2', {}, 'Fair share'),
    h('p.fair-share', { 'data-ahead': String(ahead) },
      `Your team used ${num(Math.round(gpuH * 100) / 100)} GPU-hours in the last half-life; `,
      ahead ? `${num(ahead)} ${ahead === 1 ? 'team is' : 'teams are'} ahead of you.` : 'no team is ahead of you.')];
}

async function admin(ctx, section) {
  const cqs = await api.getAll('/v1/cluster-queues?limit=500', 10);
  const flavors = {};
  const starved = [];
  const saturated = [];
  let pending = 0;
  let admitted = 0;
  for (const cq of cqs) {
    const st = cq.status || { usage: [] };
    pending += st.pending || 0;
    admitted += st.admitted || 0;
    let below = false;
    let full = false;
    for (const u of st.usage) {
      if (u.resource !== 'gpu') continue;
      const f = flavors[u.flavor] || (flavors[u.flavor] = { total: 0, nominal: 0 });
      f.total += u.total;
      f.nominal += u.nominal;
      if (u.total < u.nominal) below = true;
      if (u.borrowing_limit !== null && u.borrowing_limit !== undefined && u.total >= u.nominal + u.borrowing_limit && u.nominal + u.borrowing_limit > 0) full = true;
    }
    if ((st.pending || 0) > 0 && below) starved.push(cq);
    if (full) saturated.push(cq);
  }
  put(section, 
    h('h1', {}, 'Platform overview'),
    h('p', {}, `${num(pending)} jobs pending and ${num(admitted)} holding quota in ${num(cqs.length)} cluster queues.`),
    h('h2', {}, 'GPUs in use against nominal quota'),
    tableBox('GPUs per flavor', h('table.data', {},
      h('thead', {}, h('tr', {}, ['Flavor', 'In use', 'Nominal', 'Use'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, Object.entries(flavors).sort().map(([name, f]) => h('tr', { 'data-flavor': name },
        h('th', { scope: 'row' }, name), h('td.num', {}, num(f.total)), h('td.num', {}, num(f.nominal)),
        h('td.num', {}, f.nominal ? `${Math.round((f.total / f.nominal) * 100)} %` : '—')))))),
    h('h2', {}, 'Starved: jobs wait while quota is unused'),
    starved.length ? h('ul', {}, starved.map((cq) => h('li', {}, h('a', { href: '#/queues' }, cq.name), ` — ${cq.status.pending} pending`)))
      : h('p.muted', {}, 'None.'),
    h('h2', {}, 'Saturated: at nominal + borrowing limit'),
    saturated.length ? h('ul', {}, saturated.map((cq) => h('li', {}, h('a', { href: '#/queues' }, cq.name)))) : h('p.muted', {}, 'None.'));
}

async function finance(ctx, section) {
  const q = `from=${monthStart()}&to=${utcDay()}`;
  const [teams, report] = await Promise.all([api.getAll('/v1/teams?limit=500', 5), api.get(`/v1/costs?${q}`)]);
  const rows = teams.map((t) => {
    const net = report.rows.filter((r) => r.team === t.name && r.currency === 'USD').reduce((a, r) => a + Number(r.net_cost), 0);
    const budget = t.monthly_budget_usd;
    return { t, net, pct: budget ? net / budget : null };
  }).sort((a, b) => (b.pct ?? -1) - (a.pct ?? -1));
  put(section, 
    h('h1', {}, 'Spend this month'),
    h('p.muted', {}, `Month to date (${monthStart()} to ${utcDay()}, UTC days), net of credits, in USD. `, h('a', { href: '#/costs' }, 'Reports, charts and CSV')),
    tableBox('Spend against budget', h('table.data', {},
      h('thead', {}, h('tr', {}, ['Team', 'Net this month', 'Budget', 'Used', 'Policy'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map(({ t, net, pct }) => h('tr', { 'data-team': t.name },
        h('th', { scope: 'row' }, t.name), h('td.num', {}, money(net)),
        h('td.num', {}, t.monthly_budget_usd === null || t.monthly_budget_usd === undefined ? 'none' : money(t.monthly_budget_usd)),
        h('td.num', {}, pct === null ? '—' : `${Math.round(pct * 100)} %`, pct !== null && pct > 1 ? h('span.badge.bad', {}, ' over') : null),
        h('td', {}, t.budget_policy || 'none')))))));
}

export async function render(ctx) {
  const section = h('section', { 'data-view': 'overview' });
  put(clear(ctx.main), section);
  const role = ctx.me.role;
  if (role === 'admin') await admin(ctx, section);
  else if (role === 'finance') await finance(ctx, section);
  else await member(ctx, section);
  section.dataset.ready = '1';
  if (role === 'member') {
    /* the team's event stream redraws it; polling only while that is down */
    const status = h('p.status.muted', { 'aria-live': 'polite', 'data-live-status': '1' });
    put(ctx.main, status);
    ctx.live(ctx.me.team, () => member(ctx, section), REFRESH_MS, status);
  }
}
