/*
 * jobs.js — the Jobs views: the table (filters, name search, server-side
 * pages with the API's cursors, live refresh by conditional GET when the
 * team's event stream says something changed, polling only while it is
 * down), a job's
 * page (spec, admission, Batch job, timeline in plain words, cost, Cancel)
 * and the submit form (the API's errors[] shown next to the fields).
 */
import * as api from './api.js';
import { h, put, clear, money, num, age, when, timeEl, stateChip, tableBox } from './dom.js';
import { reasonWords, stateWords, TERMINAL, ALL_STATES } from './words.js';
import { setParams, problemBox } from './ui.js';

const REFRESH_MS = 3000;

function jobHref(job) {
  return `#/teams/${job.team}/jobs/${job.id}`;
}

async function teamNames() {
  const teams = await api.getAll('/v1/teams?limit=500', 5);
  return teams.map((t) => t.name);
}

/* Team picker for administrators ("all teams" when allowAll). */
function teamPicker(id, names, current, allowAll, onchange) {
  return h('div.field', {},
    h('label', { for: id }, 'Team'),
    h('select', { id, onchange: (e) => onchange(e.target.value) },
      allowAll ? h('option', { value: '', selected: !current }, 'All teams') : null,
      names.map((n) => h('option', { value: n, selected: n === current }, n))));
}

function position(job) {
  if (job.state !== 'PENDING') return '—';
  const q = job.position_in_queue;
  const cq = job.position_in_cluster_queue;
  if (q === null || q === undefined) return '—';
  return `≈ ${q}${cq !== null && cq !== undefined ? ` / ${cq}` : ''}`;
}

function ahead(job) {
  const a = job.ahead;
  if (!a || job.state !== 'PENDING') return '—';
  return `${num(a.jobs)} jobs, ${num(a.gpus)} GPU`;
}

function jobRow(job, showTeam) {
  const adm = job.admission || {};
  return h('tr', { dataset: { jobId: job.id, state: job.state } },
    showTeam ? h('td', {}, job.team) : null,
    h('th', { scope: 'row' }, h('a', { href: jobHref(job) }, job.name), h('br'), h('small.muted', {}, job.id)),
    h('td', {}, stateChip(job.state)),
    h('td', { title: reasonWords(job.reason) }, job.reason || ''),
    h('td', {}, job.queue),
    h('td', {}, adm.flavor || '—'),
    h('td', {}, adm.location || '—'),
    h('td', {}, timeEl(job.created_at, age(job.created_at))),
    h('td', { title: 'Position in the team queue / in the cluster queue (may lag one admission cycle)' }, position(job)),
    h('td', {}, ahead(job)),
    h('td.num', {}, num(job.request && job.request.gpu)),
    h('td.num', { dataset: { amount: job.estimated_cost_usd ?? '' } }, money(job.estimated_cost_usd)),
    h('td.num', { dataset: { amount: job.accrued_cost_usd ?? '' } }, money(job.accrued_cost_usd)));
}

function jobsTable(items, showTeam) {
  const cols = ['Job', 'State', 'Reason', 'Queue', 'Flavor', 'Region', 'Age', 'Position', 'Ahead', 'GPUs', 'Estimated', 'Accrued'];
  if (showTeam) cols.unshift('Team');
  return tableBox('Jobs', h('table.data', {},
    h('caption.sr-only', {}, 'Jobs, newest first'),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, items.length ? items.map((j) => jobRow(j, showTeam))
      : h('tr', {}, h('td.empty', { colspan: String(cols.length) }, 'No jobs match.')))));
}

function summaryStrip(summary, team) {
  return h('ul.counts', { 'aria-label': `Jobs of ${team} by state` },
    ALL_STATES.map((s) => {
      const t = summary.totals[s] || { jobs: 0, gpus: 0 };
      return h('li', {}, h('a', { href: `#/jobs?team=${team}&state=${s}` }, stateChip(s),
        h('span.count', { dataset: { state: s, jobs: t.jobs } }, ` ${num(t.jobs)}`),
        h('small.muted', {}, ` · ${num(t.gpus)} GPU`)));
    }));
}

export async function list(ctx) {
  const { me, params } = ctx;
  const admin = me.role === 'admin';
  const team = admin ? params.get('team') || '' : me.team;
  const f = {
    team: admin ? team : undefined,
    state: params.get('state') || '',
    queue: params.get('queue') || '',
    label: params.get('label') || '',
    name: params.get('name') || '',
  };
  const q = new URLSearchParams();
  for (const k of ['state', 'queue', 'label', 'name']) if (f[k]) q.set(k, f[k]);
  if (admin && team) q.set('team', team);
  if (params.get('cursor')) q.set('cursor', params.get('cursor'));
  q.set('limit', '50');
  const base = admin && !team ? '/v1/jobs' : `/v1/teams/${team}/jobs`;
  const url = admin && team ? `${base}?${withoutTeam(q)}` : `${base}?${q}`;

  const [names, queues] = await Promise.all([
    admin ? teamNames() : Promise.resolve(null),
    team ? api.getAll(`/v1/teams/${team}/queues?limit=500`, 2).catch(() => []) : Promise.resolve([]),
  ]);

  const section = h('section', { 'data-view': 'jobs' });
  const status = h('p.muted.status', { role: 'status' });
  const summaryBox = h('div');
  const tableHolder = h('div');
  const pager = h('nav.pager', { 'aria-label': 'Pages' });

  const stateSel = h('select', { id: 'f-state', name: 'state' },
    h('option', { value: '' }, 'Any state'),
    h('option', { value: 'PENDING,ADMITTED,QUEUED,RUNNING,EVICTING', selected: f.state === 'PENDING,ADMITTED,QUEUED,RUNNING,EVICTING' }, 'Active'),
    ALL_STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)));
  const queueSel = queues.length
    ? h('select', { id: 'f-queue', name: 'queue' }, h('option', { value: '' }, 'Any queue'),
      queues.map((qq) => h('option', { value: qq.name, selected: qq.name === f.queue }, qq.name)))
    : h('input', { id: 'f-queue', name: 'queue', value: f.queue, placeholder: 'queue name', pattern: '[a-z0-9-]{1,63}' });
  const labelIn = h('input', { id: 'f-label', name: 'label', value: f.label, placeholder: 'key=value' });
  const nameIn = h('input', { id: 'f-name', name: 'name', type: 'search', value: f.name, placeholder: 'part of a name' });
  const form = h('form.filters', {
    role: 'search',
    'aria-label': 'Filter jobs',
    onsubmit: (ev) => {
      ev.preventDefault();
      setParams({ team: admin ? team : undefined, state: stateSel.value, queue: queueSel.value.trim(), label: labelIn.value.trim(), name: nameIn.value.trim() });
    },
  },
  admin ? teamPicker('f-team', names, team, true, (v) => setParams({ ...f, team: v, queue: '' })) : null,
  h('div.field', {}, h('label', { for: 'f-state' }, 'State'), stateSel),
  h('div.field', {}, h('label', { for: 'f-queue' }, 'Queue'), queueSel),
  h('div.field', {}, h('label', { for: 'f-label' }, 'Label'), labelIn),
  h('div.field', {}, h('label', { for: 'f-name' }, 'Name contains'), nameIn),
  h('div.field.actions', {}, h('button', { type: 'submit' }, 'Apply'),
    h('a.button.secondary', { href: `#/submit${team ? `?team=${team}` : ''}` }, 'Submit a job')));

  put(section, h('h1', {}, admin && !team ? 'Jobs of every team' : `Jobs of ${team}`), form, summaryBox, status, tableHolder, pager);
  put(clear(ctx.main), section);

  let last = null;
  const load = async () => {
    let page;
    try {
      page = await api.get(url);
    } catch (err) {
      put(clear(tableHolder), problemBox(err));
      section.dataset.ready = '1';
      return;
    }
    if (!team) status.textContent = `Updated ${new Date().toLocaleTimeString()} · refreshes every ${REFRESH_MS / 1000} s while this tab is visible`;
    if (page === last) return; /* 304: unchanged */
    last = page;
    put(clear(tableHolder), jobsTable(page.items, admin && !team));
    clear(pager);
    if (params.get('cursor')) put(pager, h('a.button.secondary', { href: '#', onclick: (e) => { e.preventDefault(); setParams({ ...f, cursor: '' }); } }, '« Newest'));
    if (page.next_cursor) put(pager, h('a.button.secondary', { href: '#', 'data-next': '1', onclick: (e) => { e.preventDefault(); setParams({ ...f, cursor: page.next_cursor }); } }, 'Older »'));
    if (team) {
      try {
        put(clear(summaryBox), summaryStrip(await api.get(`/v1/teams/${team}/jobs/summary`), team));
      } catch { /* the table still stands */ }
    }
    section.dataset.ready = '1';
  };
  await load();
  /* a team's list follows its event stream; every team's list polls */
  if (team) ctx.live(team, load, REFRESH_MS, status);
  else ctx.poll(load, REFRESH_MS);
}

function withoutTeam(q) {
  const c = new URLSearchParams(q);
  c.delete('team');
  return c;
}

/* ---- a job's page -------------------------------------------------------- */

function dl(pairs) {
  return h('dl.props', {}, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function timeline(events) {
  return h('ol.timeline', { 'aria-label': 'Events, oldest first' }, events.map((e) => h('li', { dataset: { to: e.to } },
    timeEl(e.at),
    ' ',
    h('strong', {}, e.from ? `${e.from} → ${e.to}` : `Submitted (${e.to})`),
    e.reason ? h('span', {}, ` — ${reasonWords(e.reason)}`) : null,
    e.attempt > 1 ? h('span.muted', {}, ` (attempt ${e.attempt})`) : null,
    e.message ? h('p.muted', {}, e.message) : null)));
}

export async function page(ctx) {
  const [team, id] = ctx.args;
  const section = h('section', { 'data-view': 'job' });
  const status = h('p.status.muted', { 'aria-live': 'polite', 'data-live-status': '1' });
  put(clear(ctx.main), section, status);
  let lastJob = null;
  let lastEvents = null;
  let confirming = false;

  /* the log pane lives across redraws: its lines come from one follow
   * stream (GET …/logs?follow=true), which ends when the job ends */
  const logLines = h('pre.log', { tabindex: '0', 'aria-label': 'The job\'s log, oldest first', 'aria-live': 'polite' });
  const logState = h('p.muted', { 'data-log-state': 'starting' }, 'Connecting to the log…');
  const logPane = h('div.card', { 'data-log': '1' }, h('h2', {}, 'Log'), logState, logLines);
  const setLogState = (state, words) => {
    logState.dataset.logState = state;
    logState.textContent = words;
  };
  const follow = async () => {
    const ctl = new AbortController();
    const watch = setInterval(() => { if (!ctx.alive()) { ctl.abort(); clearInterval(watch); } }, 1000);
    setLogState('following', 'Following the log as it is written…');
    try {
      await api.stream(`/v1/teams/${team}/jobs/${id}/logs?follow=true`, (e) => {
        const where = [e.attempt != null ? `attempt ${e.attempt}` : null, e.task != null ? `task ${e.task}` : null].filter(Boolean).join(' ');
        logLines.append(h('span', { dataset: { severity: e.severity } }, `${where ? `[${where}] ` : ''}${e.text}\n`));
      }, ctl.signal);
      setLogState('ended', logLines.childNodes.length ? 'The job has ended; this is its whole log.' : 'The job has ended; it wrote no log.');
    } catch (err) {
      if (!ctx.alive()) return;
      setLogState('down', `The log cannot be followed now (${err.status === 429 ? 'Cloud Logging\'s read budget is spent' : err.message || 'the stream broke'}); trying again shortly.`);
      setTimeout(() => { if (ctx.alive()) { logLines.textContent = ''; follow(); } }, 10000);
    } finally {
      clearInterval(watch);
    }
  };

  const draw = (job, events) => {
    const adm = job.admission;
    const terminal = TERMINAL.includes(job.state);
    const cancelArea = h('div.actions', {});
    if (!terminal) {
      if (!confirming) {
        put(cancelArea, h('button.danger', { type: 'button', onclick: () => { confirming = true; draw(job, events); } }, 'Cancel job…'));
      } else {
        put(cancelArea, 
          h('span', {}, 'Cancel this job? '),
          h('button.danger', {
            type: 'button',
            'data-confirm-cancel': '1',
            onclick: async () => {
              try {
                const after = await api.post(`/v1/teams/${team}/jobs/${id}/cancel`);
                confirming = false;
                lastJob = after;
                draw(after, events);
              } catch (err) {
                put(cancelArea, problemBox(err));
              }
            },
          }, 'Yes, cancel it'),
          h('button.secondary', { type: 'button', onclick: () => { confirming = false; draw(job, events); } }, 'Keep it'));
      }
    }
    put(clear(section), 
      h('p', {}, h('a', { href: `#/jobs${ctx.me.role === 'admin' ? `?team=${team}` : ''}` }, '← Jobs')),
      h('h1', {}, job.name, ' ', stateChip(job.state)),
      h('p.lead', { 'data-state-words': job.state }, stateWords(job.state),
        job.reason ? h('span', {}, ` — ${reasonWords(job.reason)}`) : null),
      cancelArea,
      job.state === 'PENDING' ? h('div.card', {},
        h('h2', {}, 'Why is it waiting?'),
        h('p', {}, reasonWords(job.reason) || 'It waits for the next admission cycle.'),
        dl([
          ['Position in its queue', position(job)],
          job.ahead ? ['Ahead of it in the cluster queue', ahead(job)] : null,
          ['Waiting for', age(job.created_at)],
        ]),
        h('p.muted', {}, 'Positions come from the admission loop and may lag one cycle.')) : null,
      h('div.grid', {},
        h('div.card', {}, h('h2', {}, 'Job'), dl([
          ['Id', h('code', {}, job.id)],
          ['Team', job.team],
          ['Queue', `${job.queue} → ${job.cluster_queue}`],
          ['Priority', `${job.priority_class} (${job.priority})`],
          ['Attempt', String(job.attempt)],
          ['Request', `${num(job.request.gpu)} GPU · ${num(job.request.cpu_milli)} mCPU · ${num(job.request.memory_mib)} MiB`],
          ['Submitted', timeEl(job.created_at)],
          ['Last change', timeEl(job.updated_at)],
        ])),
        h('div.card', {}, h('h2', {}, 'Admission'), adm ? dl([
          ['Flavor', adm.flavor],
          ['Region', adm.location || '—'],
          ['Borrowed', adm.borrowed ? 'yes, from the cohort' : 'no'],
          ['Admitted', timeEl(adm.admitted_at)],
        ]) : h('p.muted', {}, 'Not admitted now.'),
        h('h2', {}, 'Cloud Batch'), job.batch_job ? dl([
          ['Batch job', h('code.wrap', {}, job.batch_job.name)],
          ['Batch state', job.batch_job.state || '—'],
        ]) : h('p.muted', {}, 'No Batch job now.')),
        h('div.card', {}, h('h2', {}, 'Cost'), dl([
          ['Estimated', h('span', { dataset: { amount: job.estimated_cost_usd ?? '' } }, money(job.estimated_cost_usd))],
          ['Accrued so far', h('span', { dataset: { amount: job.accrued_cost_usd ?? '' } }, money(job.accrued_cost_usd))],
        ]), h('p.muted', {}, 'Estimated: price × GPUs × the longest run. Accrued: price × GPUs × the time run. The bill arrives per team and month (Costs).'))),
      logPane,
      h('h2', {}, 'Timeline'),
      timeline(events),
      h('h2', {}, 'Spec'),
      h('pre.spec', { tabindex: '0', 'aria-label': 'The job as submitted (JSON)' }, JSON.stringify(job.spec, null, 2)));
    section.dataset.state = job.state;
    section.dataset.ready = '1';
  };

  const load = async () => {
    let job;
    let events;
    try {
      [job, events] = await Promise.all([
        api.get(`/v1/teams/${team}/jobs/${id}`),
        api.getAll(`/v1/teams/${team}/jobs/${id}/events?limit=500`, 4),
      ]);
    } catch (err) {
      put(clear(section), h('p', {}, h('a', { href: '#/jobs' }, '← Jobs')), problemBox(err));
      section.dataset.ready = '1';
      return false;
    }
    if (job === lastJob && events.length === (lastEvents || []).length) return true;
    lastJob = job;
    lastEvents = events;
    draw(job, events);
    return true;
  };
  /* the team's event stream says when this job changed; its log follows */
  if (await load()) {
    follow();
    ctx.live(team, load, 2000, status, (type, e) => e.job_id === id);
  }
}

/* ---- the submit form ----------------------------------------------------- */

const FIELDS = [
  /* [field path, label, kind, help] */
  ['name', 'Name', 'text', 'Lowercase letters, digits and -, at most 63.'],
  ['queue', 'Queue', 'queue', ''],
  ['priority_class', 'Priority class', 'pclass', ''],
  ['task_count', 'Tasks', 'int', 'How many tasks the job runs (default 1).'],
  ['parallelism', 'Parallelism', 'int', 'Tasks at once (default: all). The request is parallelism × the task\'s resources.'],
  ['task.image', 'Container image', 'text', 'For example us-docker.pkg.dev/p/r/trainer:1.2'],
  ['task.commands', 'Command', 'lines', 'One argument a line.'],
  ['task.env', 'Environment', 'pairs', 'NAME=value, one a line.'],
  ['task.cpu_milli', 'CPU per task (millicores)', 'int', ''],
  ['task.memory_mib', 'Memory per task (MiB)', 'int', ''],
  ['task.gpu', 'GPUs per task', 'int', ''],
  ['max_run_duration_s', 'Longest run (seconds)', 'int', 'Empty: the cluster queue\'s or flavor\'s default.'],
  ['max_retry_count', 'Retries', 'int', ''],
  ['locations', 'Regions', 'csv', 'Comma-separated; empty: any region of the flavor.'],
  ['labels', 'Labels', 'pairs', 'key=value, one a line.'],
  ['checkpoint_uri', 'Checkpoint URI', 'text', 'gs://…'],
];

function fieldId(path) {
  return `sf-${path.replace(/[^a-z0-9]/gi, '-')}`;
}

function setPath(obj, path, v) {
  const parts = path.split('.');
  let o = obj;
  for (const p of parts.slice(0, -1)) o = o[p] || (o[p] = {});
  o[parts[parts.length - 1]] = v;
}

function pairs(text) {
  const o = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const i = line.indexOf('=');
    if (i < 0) o[line] = '';
    else o[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return o;
}

export async function submit(ctx) {
  const { me, params } = ctx;
  const admin = me.role === 'admin';
  const team = admin ? params.get('team') || '' : me.team;
  const section = h('section', { 'data-view': 'submit' });
  put(clear(ctx.main), section);
  const names = admin ? await teamNames() : null;
  put(section, h('h1', {}, team ? `Submit a job to ${team}` : 'Submit a job'));
  if (admin) {
    put(section, h('form.filters', { 'aria-label': 'Team', onsubmit: (e) => e.preventDefault() },
      teamPicker('s-team', ['', ...names].filter(Boolean), team, false, (v) => setParams({ team: v }))));
  }
  if (!team) {
    put(section, h('p', {}, 'Choose the team the job belongs to.'));
    section.dataset.ready = '1';
    return;
  }
  const [queues, classes] = await Promise.all([
    api.getAll(`/v1/teams/${team}/queues?limit=500`, 2),
    api.getAll('/v1/priority-classes?limit=500', 2),
  ]);
  const inputs = {};
  const general = h('div', { 'aria-live': 'assertive' });
  const fields = FIELDS.map(([path, label, kind, help]) => {
    const id = fieldId(path);
    let input;
    if (kind === 'queue') {
      input = h('select', { id }, queues.map((q) => h('option', { value: q.name }, `${q.name} → ${q.cluster_queue}`)));
    } else if (kind === 'pclass') {
      input = h('select', { id }, h('option', { value: '' }, 'the default class'),
        classes.map((c) => h('option', { value: c.name }, `${c.name} (${c.value})`)));
    } else if (kind === 'lines' || kind === 'pairs') {
      input = h('textarea', { id, rows: '3', spellcheck: 'false' });
    } else {
      input = h('input', { id, type: kind === 'int' ? 'number' : 'text', inputmode: kind === 'int' ? 'numeric' : null, spellcheck: 'false', autocomplete: 'off' });
    }
    input.dataset.field = path;
    inputs[path] = { input, kind };
    const helpId = `${id}-help`;
    if (help) input.setAttribute('aria-describedby', helpId);
    return h('div.field', { 'data-for': path },
      h('label', { for: id }, label), input, help ? h('small.muted', { id: helpId }, help) : null);
  });
  inputs['task.image'].input.value = 'us-docker.pkg.dev/p/r/trainer:1.2';
  inputs['task.commands'].input.value = 'python\ntrain.py';
  inputs['task.cpu_milli'].input.value = '2000';
  inputs['task.memory_mib'].input.value = '10240';
  inputs['task.gpu'].input.value = '1';

  const button = h('button', { type: 'submit' }, 'Submit');
  const form = h('form.submit-form', { novalidate: true, 'aria-label': 'New job', onsubmit: onSubmit }, fields, h('div.actions', {}, button));
  put(section, general, form);
  section.dataset.ready = '1';

  function body() {
    const b = {};
    for (const [path, { input, kind }] of Object.entries(inputs)) {
      const v = input.value;
      if (kind === 'int') {
        if (v.trim() !== '') setPath(b, path, Number(v));
      } else if (kind === 'lines') {
        setPath(b, path, v.split('\n').map((l) => l.trim()).filter(Boolean));
      } else if (kind === 'pairs') {
        if (v.trim()) setPath(b, path, pairs(v));
      } else if (kind === 'csv') {
        const list = v.split(',').map((s) => s.trim()).filter(Boolean);
        if (list.length) setPath(b, path, list);
      } else if (v.trim() !== '') {
        setPath(b, path, v.trim());
      }
    }
    return b;
  }

  function clearErrors() {
    for (const el of form.querySelectorAll('.field-error')) el.remove();
    for (const { input } of Object.values(inputs)) {
      input.removeAttribute('aria-invalid');
      const d = (input.getAttribute('aria-describedby') || '').split(' ').filter((x) => !x.endsWith('-err'));
      if (d.length) input.setAttribute('aria-describedby', d.join(' '));
      else input.removeAttribute('aria-describedby');
    }
    clear(general);
  }

  /* The form field an API error names: the same path, or the longest
   * field path it is inside (labels.x → labels, task.commands[2] →
   * task.commands). */
  function fieldFor(apiField) {
    let best = null;
    for (const path of Object.keys(inputs)) {
      if (apiField === path || apiField.startsWith(`${path}.`) || apiField.startsWith(`${path}[`)) {
        if (!best || path.length > best.length) best = path;
      }
    }
    if (!best && apiField === 'task') best = 'task.cpu_milli';
    return best;
  }

  async function onSubmit(ev) {
    ev.preventDefault();
    clearErrors();
    button.disabled = true;
    try {
      const job = await api.post(`/v1/teams/${team}/jobs`, body(), { 'Idempotency-Key': crypto.randomUUID() });
      location.hash = jobHref(job);
    } catch (err) {
      const errors = (err.problem && err.problem.errors) || [];
      const unplaced = [];
      let first = null;
      for (const e of errors) {
        const path = fieldFor(e.field || '');
        if (!path) {
          unplaced.push(e);
          continue;
        }
        const { input } = inputs[path];
        const errId = `${fieldId(path)}-err`;
        let p = form.querySelector(`#${errId}`);
        if (!p) {
          p = h('p.field-error', { id: errId, 'data-error-for': path });
          input.parentElement.append(p);
        }
        p.append(h('span', {}, `${e.field}: ${e.message}`), ' ');
        input.setAttribute('aria-invalid', 'true');
        input.setAttribute('aria-describedby', [input.getAttribute('aria-describedby'), errId].filter(Boolean).join(' '));
        first = first || input;
      }
      const box = problemBox({ ...err, problem: { ...err.problem, errors: unplaced.length ? unplaced : undefined } });
      put(general, box);
      if (first) first.focus();
    } finally {
      button.disabled = false;
    }
  }
}
