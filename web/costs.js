/*
 * costs.js — the Costs view: spend per team against budget (month to date,
 * committed estimates of admitted jobs, forecast), a daily spend chart for
 * a chosen range grouped by team, flavor or SKU, the savings of spot and
 * Flex Start against on-demand, and CSV downloads of exactly the queries
 * on screen. How fresh the figures are (data_through) and which months of
 * the range are closed; the invoice months with their state, where finance
 * closes a month (after a confirmation); FOCUS 1.2 downloads (every team
 * for finance and admin, the member's team for members). Every figure is
 * the API's; money is shown with its currency.
 */
import * as api from './api.js';
import { h, put, clear, money, num, tableBox, utcDay, monthStart } from './dom.js';
import { setParams, problemBox } from './ui.js';

const MAX_SERIES = 8;
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

function qs(o) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v) s.set(k, v);
  return s.toString();
}

async function downloadCsv(path, filename, status) {
  try {
    const text = await api.getCsv(path);
    const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
    const a = h('a', { href: url, download: filename });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    status.textContent = `Downloaded ${filename}.`;
  } catch (err) {
    put(clear(status), problemBox(err));
  }
}

function csvButton(label, path, filename) {
  const status = h('span.muted', { role: 'status' });
  return h('span.csv', {}, h('button.secondary', { type: 'button', 'data-csv': path, onclick: () => downloadCsv(path, filename, status) }, label), ' ', status);
}

/* How fresh the report is, and the state of each month it covers. */
function freshness(report) {
  const through = report.data_through;
  return h('p.freshness', { 'data-through': through || '' },
    through ? `Billing data through ${through.slice(0, 10)} ${through.slice(11, 16)} UTC` : 'No billing data loaded yet',
    (report.months || []).length ? ' · ' : '',
    (report.months || []).map((m, i) => h('span', {},
      i ? ', ' : '',
      `${m.month} `,
      h(`span.chip.month-${m.closed ? 'closed' : 'open'}`, { 'data-month': m.month, 'data-closed': String(m.closed) }, m.closed ? 'closed' : 'open'))));
}

/* The month before this one (UTC), YYYY-MM. */
function lastMonth() {
  const d = new Date();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() - 1);
  return d.toISOString().slice(0, 7);
}

/*
 * The invoice months (GET /v1/costs/months) and, for finance, closing one:
 * "Close…" asks first, in the page (no browser dialog), then posts and
 * redraws. The last month is listed even without costs, so that it can be
 * closed; the current month cannot be (it has not ended).
 */
function monthsSection(list, canClose, onClosed) {
  const box = h('div.months');
  const thisMonth = utcDay().slice(0, 7);
  const months = [...list.months];
  if (!months.some((m) => m.month === lastMonth())) {
    months.push({ month: lastMonth(), state: 'open', closed_at: null, closed_by: null, totals: [] });
    months.sort((a, b) => (a.month < b.month ? -1 : 1));
  }
  let confirming = null;
  const draw = (err) => {
    put(clear(box), tableBox('Invoice months', h('table.data.months', {},
      h('thead', {}, h('tr', {}, ['Month', 'State', 'Total', 'Corrections posted here', canClose ? 'Close' : null].filter(Boolean).map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, months.slice().reverse().map((m) => h('tr', { 'data-month': m.month },
        h('th', { scope: 'row' }, m.month),
        h('td', {}, h(`span.chip.month-${m.state}`, { 'data-state': m.state }, m.state),
          m.closed_by ? h('small', {}, ` by ${m.closed_by} at ${m.closed_at}`) : null),
        h('td.num', {}, m.totals.map((t) => money(t.total, t.currency)).join(' + ') || money(0)),
        h('td.num', {}, m.totals.map((t) => money(t.corrections, t.currency)).join(' + ') || money(0)),
        canClose ? h('td', {}, m.state === 'open' && m.month < thisMonth ? (confirming === m.month
          ? h('span.confirm', {},
            `Close ${m.month}? Its reports will no longer change; rows that arrive later for it become corrections in the first open month. `,
            h('button.danger', {
              type: 'button',
              'data-confirm-close': m.month,
              onclick: async () => {
                try {
                  await api.post(`/v1/costs/months/${m.month}/close`);
                  onClosed();
                } catch (e) {
                  confirming = null;
                  draw(e);
                }
              },
            }, 'Yes, close it'),
            ' ',
            h('button.secondary', { type: 'button', onclick: () => { confirming = null; draw(); } }, 'Keep it open'))
          : h('button.secondary', { type: 'button', 'data-close': m.month, onclick: () => { confirming = m.month; draw(); } }, `Close ${m.month}…`)) : '') : null))))),
    err ? problemBox(err) : null);
  };
  draw();
  return box;
}

/* A stacked bar per day, one colour per series. */
function chart(rows, key, from, to) {
  const currency = (rows[0] && rows[0].currency) || 'USD';
  const use = rows.filter((r) => r.currency === currency && r.day);
  const totals = {};
  for (const r of use) totals[r[key] || '(none)'] = (totals[r[key] || '(none)'] || 0) + Number(r.net_cost);
  let series = Object.keys(totals).sort((a, b) => totals[b] - totals[a]);
  const other = series.length > MAX_SERIES ? series.slice(MAX_SERIES - 1) : [];
  if (other.length) series = [...series.slice(0, MAX_SERIES - 1), 'other'];
  const days = [];
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`) && days.length < 400; d.setUTCDate(d.getUTCDate() + 1)) days.push(utcDay(d));
  const byDay = {};
  for (const r of use) {
    const s = other.includes(r[key] || '(none)') ? 'other' : r[key] || '(none)';
    const d = byDay[r.day] || (byDay[r.day] = {});
    d[s] = (d[s] || 0) + Number(r.net_cost);
  }
  const max = Math.max(1e-9, ...days.map((d) => Object.values(byDay[d] || {}).filter((v) => v > 0).reduce((a, b) => a + b, 0)));
  const W = 800;
  const H = 220;
  const bw = W / Math.max(1, days.length);
  const svg = h('svg', { viewBox: `0 0 ${W} ${H + 20}`, class: 'chart', role: 'img', 'aria-label': `Daily net cost in ${currency} by ${key}, ${from} to ${to}; the table below has the figures.` });
  days.forEach((d, i) => {
    let y = H;
    series.forEach((s, si) => {
      const v = (byDay[d] || {})[s] || 0;
      if (v <= 0) return;
      const hh = (v / max) * (H - 10);
      y -= hh;
      svg.append(h('rect', { x: (i * bw + 1).toFixed(1), y: y.toFixed(1), width: Math.max(1, bw - 2).toFixed(1), height: hh.toFixed(1), class: `s${si}` },
        h('title', {}, `${d} · ${s}: ${money(v, currency)}`)));
    });
  });
  svg.append(h('line', { x1: 0, y1: H, x2: W, y2: H, class: 'axis' }));
  svg.append(h('text', { x: 2, y: H + 16, class: 'tick' }, days[0] || ''));
  svg.append(h('text', { x: W - 2, y: H + 16, class: 'tick end' }, days[days.length - 1] || ''));
  svg.append(h('text', { x: 2, y: 12, class: 'tick' }, `max ${money(max, currency)} a day`));
  const legend = h('ul.legend', { 'aria-label': 'Series' }, series.map((s, si) => h('li', {}, h(`span.swatch.s${si}`, { 'aria-hidden': 'true' }), ` ${s}`)));
  return h('figure.chart-box', {}, svg, legend);
}

function detailTable(rows, key) {
  const cols = ['Day', key === 'team' ? 'Team' : key === 'flavor' ? 'Flavor' : 'SKU', 'Currency', 'Cost', 'Credits', 'Net', 'GPU-hours'];
  return tableBox('Daily costs', h('table.data', {},
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {},
      h('td', {}, r.day || '', r.charge_class ? h('span.badge.warn', { 'data-correction': '1' }, ' correction') : null),
      h('td', {}, key === 'team' ? r.team : (r[key] || '(none)') + (key !== 'team' && r.team ? ` · ${r.team}` : '')),
      h('td', {}, r.currency),
      h('td.num', {}, money(r.cost, r.currency)),
      h('td.num', {}, money(r.credits, r.currency)),
      h('td.num', {}, money(r.net_cost, r.currency)),
      h('td.num', {}, num(r.usage_gpu_hours))))
      : h('tr', {}, h('td.empty', { colspan: String(cols.length) }, 'No costs in this range.')))));
}

function totalsList(totals) {
  return h('ul.totals', { 'aria-label': 'Totals per currency' }, (totals || []).map((t) => h('li', { dataset: { currency: t.currency, net: t.net_cost } },
    h('strong', {}, money(t.net_cost, t.currency)), ` net (${money(t.cost, t.currency)} cost, ${money(t.credits, t.currency)} credits)`)));
}

function budgetBar(b) {
  const budget = Number(b.monthly_budget_usd);
  const mtd = Number(b.month_to_date_net_usd);
  const committed = Number(b.committed_estimate_usd);
  const forecast = Number(b.forecast_usd);
  const top = Math.max(budget, mtd + committed, forecast, 1e-9);
  const seg = (cls, v) => {
    const s = h(`span.seg.${cls}`);
    s.style.width = `${Math.max(0, Math.min(100, (v / top) * 100))}%`;
    return s;
  };
  const mark = (cls, v) => {
    const m = h(`span.${cls}`);
    m.style.left = `${Math.min(100, (v / top) * 100)}%`;
    return m;
  };
  const label = `Month to date ${money(mtd)}, committed ${money(committed)}, forecast ${money(forecast)}, budget ${money(budget)}`;
  return h('div.bar.budget', { role: 'img', 'aria-label': label, title: label }, seg('own', mtd), seg('committed', committed), mark('nominal-mark', budget), mark('forecast-mark', forecast));
}

function budgetCell(b) {
  if (!b || b.monthly_budget_usd === null || b.monthly_budget_usd === undefined) return h('td', {}, 'no budget');
  const pct = Number(b.monthly_budget_usd) > 0 ? Math.round((Number(b.month_to_date_net_usd) / Number(b.monthly_budget_usd)) * 100) : 0;
  return h('td', {}, budgetBar(b),
    h('small', {}, `${money(b.month_to_date_net_usd)} of ${money(b.monthly_budget_usd)} (${pct} %) · committed ${money(b.committed_estimate_usd)} · forecast ${money(b.forecast_usd)} · policy ${b.budget_policy}`),
    b.over_budget ? h('span.badge.bad', {}, ' over budget') : null);
}

export async function render(ctx) {
  const { me, params } = ctx;
  const member = me.role === 'member';
  const from = DAY_RE.test(params.get('from') || '') ? params.get('from') : monthStart();
  const to = DAY_RE.test(params.get('to') || '') ? params.get('to') : utcDay();
  const by = ['team', 'flavor', 'sku'].includes(params.get('by')) ? params.get('by') : member ? 'flavor' : 'team';
  const section = h('section', { 'data-view': 'costs' });
  put(clear(ctx.main), section);

  const fromIn = h('input', { id: 'c-from', type: 'date', value: from, required: true });
  const toIn = h('input', { id: 'c-to', type: 'date', value: to, required: true });
  const bySel = h('select', { id: 'c-by' }, (member ? ['flavor', 'sku'] : ['team', 'flavor', 'sku']).map((k) => h('option', { value: k, selected: k === by }, k === 'sku' ? 'SKU' : k)));
  put(section, 
    h('h1', {}, member ? `Costs of ${me.team}` : 'Costs by team'),
    h('form.filters', { 'aria-label': 'Range and grouping', onsubmit: (e) => { e.preventDefault(); setParams({ from: fromIn.value, to: toIn.value, by: bySel.value }); } },
      h('div.field', {}, h('label', { for: 'c-from' }, 'From (UTC day)'), fromIn),
      h('div.field', {}, h('label', { for: 'c-to' }, 'To (UTC day)'), toIn),
      h('div.field', {}, h('label', { for: 'c-by' }, 'Group the chart by'), bySel),
      h('div.field.actions', {}, h('button', { type: 'submit' }, 'Show'))));

  const groupBy = by === 'team' ? 'day' : `day,${by}`;
  const monthQ = qs({ from: monthStart(), to: utcDay() });
  if (member) {
    const path = `/v1/teams/${me.team}/costs?${qs({ from, to, group_by: groupBy })}`;
    const [report, month] = await Promise.all([api.get(path), api.get(`/v1/teams/${me.team}/costs?${monthQ}`)]);
    const focusPath = `/v1/teams/${me.team}/costs/focus?${qs({ from, to })}`;
    put(section, 
      freshness(report),
      h('h2', {}, 'Budget this month'),
      tableBox('Budget', h('table.data', {}, h('thead', {}, h('tr', {}, ['Team', 'Budget'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, h('tr', { 'data-team': me.team }, h('th', { scope: 'row' }, me.team), budgetCell(month.budget))))),
      h('h2', {}, `Daily net cost, ${from} to ${to}`),
      chart(report.rows, by, from, to),
      totalsList(report.totals),
      csvButton('Download CSV', path, `costs-${me.team}-${from}-${to}.csv`),
      csvButton('Download FOCUS', focusPath, `focus-${me.team}-${from}-${to}.csv`),
      detailTable(report.rows, by));
    section.dataset.ready = '1';
    return;
  }

  const teamsPath = `/v1/costs?${qs({ from, to })}`;
  const dailyPath = `/v1/costs?${qs({ from, to, group_by: groupBy })}`;
  const savingsPath = `/v1/costs/savings?${qs({ from, to })}`;
  const focusPath = `/v1/costs/focus?${qs({ from, to })}`;
  const [teams, perTeam, daily, savings, months] = await Promise.all([
    api.getAll('/v1/teams?limit=500', 5),
    api.get(teamsPath),
    api.get(dailyPath),
    api.get(savingsPath).catch((err) => ({ error: err })),
    api.get('/v1/costs/months').catch((err) => ({ error: err })),
  ]);
  const budgets = {};
  await Promise.all(teams.filter((t) => t.monthly_budget_usd !== null && t.monthly_budget_usd !== undefined).slice(0, 100)
    .map(async (t) => {
      try {
        budgets[t.name] = (await api.get(`/v1/teams/${t.name}/costs?${monthQ}`)).budget;
      } catch { /* shown as no budget */ }
    }));
  const names = [...new Set([...teams.map((t) => t.name), ...perTeam.rows.map((r) => r.team)])].sort();
  const rowsOf = (t) => perTeam.rows.filter((r) => r.team === t);
  put(section, 
    freshness(perTeam),
    h('h2', {}, `Spend per team, ${from} to ${to}`),
    tableBox('Spend per team', h('table.data.per-team', {},
      h('thead', {}, h('tr', {}, ['Team', 'Net cost', 'Cost', 'Credits', 'GPU-hours', 'Budget this month'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, names.map((t) => {
        const rs = rowsOf(t);
        const cur = (r, k) => rs.map((x) => money(x[k], x.currency)).join(' + ') || money(0);
        return h('tr', { 'data-team': t },
          h('th', { scope: 'row' }, t),
          h('td.num', { 'data-net': rs.map((r) => `${r.currency}:${r.net_cost}`).join(' ') }, cur(rs, 'net_cost')),
          h('td.num', {}, cur(rs, 'cost')),
          h('td.num', {}, cur(rs, 'credits')),
          h('td.num', {}, num(rs.reduce((a, r) => a + Number(r.usage_gpu_hours || 0), 0))),
          budgetCell(budgets[t]));
      })))),
    totalsList(perTeam.totals),
    csvButton('Download CSV of this table', teamsPath, `costs-by-team-${from}-${to}.csv`),
    csvButton('Download FOCUS (every team)', focusPath, `focus-${from}-${to}.csv`),
    h('h2', {}, `Daily net cost by ${by}`),
    chart(daily.rows, by, from, to),
    csvButton('Download CSV of the daily costs', dailyPath, `costs-daily-${by}-${from}-${to}.csv`),
    detailTable(daily.rows, by),
    h('h2', {}, 'Savings of spot and Flex Start against on-demand'),
    savings.error ? problemBox(savings.error) : tableBox('Savings', h('table.data', {},
      h('thead', {}, h('tr', {}, ['Team', 'Flavor', 'Model', 'GPU-hours', 'On-demand equivalent', 'Paid', 'Saved'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, savings.rows.length ? savings.rows.map((r) => h('tr', {},
        h('th', { scope: 'row' }, r.team), h('td', {}, r.flavor), h('td', {}, r.provisioning_model),
        h('td.num', {}, num(r.usage_gpu_hours)),
        h('td.num', {}, r.on_demand_equivalent === null ? 'n/a (not USD)' : money(r.on_demand_equivalent, r.currency)),
        h('td.num', {}, money(r.paid, r.currency)),
        h('td.num', {}, r.savings === null ? 'n/a' : money(r.savings, r.currency))))
        : h('tr', {}, h('td.empty', { colspan: '7' }, 'No spot or Flex Start usage in this range.'))))),
    savings.error ? null : csvButton('Download CSV of the savings', savingsPath, `savings-${from}-${to}.csv`),
    h('h2', {}, 'Invoice months'),
    months.error ? problemBox(months.error) : monthsSection(months, me.role === 'finance', () => render(ctx)));
  section.dataset.ready = '1';
}
