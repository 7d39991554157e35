/*
 * console.test.mjs — the web console in Debian's Chromium (headless,
 * driven by playwright-core from deploy/tools), against the gpugate,
 * PostgreSQL and Batch emulator that tests/console-check.sh started.
 * Each test signs in like a user (the #token= fragment), reads the screen
 * and compares it with the API's own answers. Every view is screenshotted
 * into $CONSOLE_SHOTS and checked with axe-core.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = process.env.CONSOLE_ROOT;
const base = process.env.CONSOLE_BASE;
const shots = process.env.CONSOLE_SHOTS;
const require = createRequire(path.join(root, 'deploy/tools/package.json'));
const { chromium } = require('playwright-core');
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const offOrigin = [];
const cspViolations = [];
const pageErrors = [];
const dialogs = [];
const axeFindings = [];
let browser;

function utcMonth() {
  return new Date().toISOString().slice(0, 7);
}

function token(team, role, ttl = 3600) {
  return execFileSync(path.join(root, 'build/gpugate'), ['token', '--team', team, '--role', role, '--ttl', String(ttl)],
    { env: process.env }).toString().trim();
}

const member = token('team-a', 'member');
const memberB = token('team-b', 'member');
const admin = token('platform', 'admin');
const finance = token('finance', 'finance');

async function api(tok, method, p, body, headers = {}) {
  const h = { Authorization: `Bearer ${tok}`, ...headers };
  if (body !== undefined && typeof body !== 'string') h['Content-Type'] = 'application/json';
  const r = await fetch(base + p, { method, headers: h, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* CSV or empty */ }
  return { status: r.status, json, text, headers: r.headers };
}

async function submitJob(tok, team, name, extra = {}) {
  const r = await api(tok, 'POST', `/v1/teams/${team}/jobs`, {
    name, queue: 'lp', task: { image: 'us-docker.pkg.dev/p/r/trainer:1.2', commands: ['python', 'train.py'], cpu_milli: 1000, memory_mib: 4096, gpu: 1 }, ...extra,
  });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

/* A page at the console opened by a #token= link; unless confirm is
 * false, the person then says yes to using the link's token. */
async function open(tok, hash = '', viewport = { width: 1280, height: 900 }, waitOverview = true, confirm = true) {
  const context = await browser.newContext({ viewport, timezoneId: 'Europe/Amsterdam', locale: 'en-US', acceptDownloads: true });
  const page = await context.newPage();
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.protocol !== 'blob:' && u.origin !== base) offOrigin.push(r.url());
  });
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text()); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(`${base}/${tok ? `#token=${tok}` : ''}`);
  if (tok && confirm) {
    await page.waitForSelector('[data-view="confirm-token"][data-ready]');
    await page.click('#use-token');
  }
  if (tok && waitOverview) await page.waitForSelector('[data-view="overview"][data-ready]');
  if (hash) {
    await page.evaluate((h) => { location.hash = h; }, hash);
  }
  return { page, context };
}

async function ready(page, view) {
  await page.waitForSelector(`[data-view="${view}"][data-ready]`, { timeout: 20000 });
}

async function shoot(page, name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

/* axe-core injected by CDP evaluation (not subject to the page's CSP). */
async function axe(page, name) {
  await page.evaluate(axeSource);
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }));
  });
  for (const v of res) if (v.impact === 'serious' || v.impact === 'critical') axeFindings.push({ view: name, ...v });
  return res;
}

before(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
});

after(async () => {
  if (browser) await browser.close();
});

test('the page and its files: strict CSP, nosniff, no-referrer, same origin only', async () => {
  const r = await fetch(`${base}/`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/html/);
  const csp = r.headers.get('content-security-policy');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self';/);
  assert.match(csp, /style-src 'self';/);
  assert.doesNotMatch(csp, /unsafe|https?:|\*/);
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
  const html = await r.text();
  assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]|style="/, 'no inline script or style');
  for (const ref of html.matchAll(/(?:src|href)="([^"]*)"/g)) assert.match(ref[1], /^(\/[^/]|data:|#)/, ref[1]);
  const js = await fetch(`${base}/ui/app.js`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  const again = await fetch(`${base}/ui/app.js`, { headers: { 'If-None-Match': js.headers.get('etag') } });
  assert.equal(again.status, 304);
  assert.equal((await fetch(`${base}/ui/nope.js`)).status, 404);
  /* the whole first load, gzip-compressed, stays under 300 KB */
  const zlib = await import('node:zlib');
  let total = zlib.gzipSync(Buffer.from(html)).length;
  for (const f of fs.readdirSync(path.join(root, 'web'))) {
    if (f === 'index.html') continue;
    const body = Buffer.from(await (await fetch(`${base}/ui/${f}`)).arrayBuffer());
    total += zlib.gzipSync(body).length;
  }
  assert.ok(total < 300 * 1024, `first load ${total} bytes compressed`);
});

test('sign in through the fragment: the token leaves the address bar, whose it is is asked first, who you are is shown', async () => {
  const { page, context } = await open(member, '', undefined, false, false);
  /* a link's token can be anyone's: shown, not used until the person says so */
  await page.waitForSelector('[data-view="confirm-token"][data-ready]');
  assert.doesNotMatch(page.url(), /token=/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('gpugate.token')), null);
  assert.equal(await page.textContent('#offered-who'), 'team-a:member');
  assert.equal(await page.textContent('#offered-grants'), 'member of team-a');
  await shoot(page, 'confirm-token');
  await axe(page, 'confirm-token');
  await page.click('#use-token');
  await ready(page, 'overview');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('gpugate.token')), member);
  assert.equal(await page.evaluate(() => document.cookie), '');
  assert.match(await page.textContent('#who'), /team-a · member/);
  const navText = await page.textContent('#nav');
  assert.match(navText, /Jobs/);
  await shoot(page, 'overview-member');
  await axe(page, 'overview-member');
  await context.close();
});

test('a #token= link refused by the person is never used', async () => {
  const { page, context } = await open(member, '', undefined, false, false);
  await page.waitForSelector('[data-view="confirm-token"][data-ready]');
  await page.click('#reject-token');
  await page.waitForSelector('[data-view="signin"][data-ready]');
  assert.match(await page.textContent('[data-view="signin"]'), /not used/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('gpugate.token')), null);
  await context.close();
});

test('a member sees her team\'s jobs and not another team\'s; its URL shows not found', async () => {
  const mine = await submitJob(member, 'team-a', 'console-mine');
  const theirs = await submitJob(memberB, 'team-b', 'console-theirs');
  const { page, context } = await open(member, '#/jobs');
  await ready(page, 'jobs');
  await page.waitForSelector(`tr[data-job-id="${mine.id}"]`);
  const text = await page.textContent('[data-view="jobs"] table');
  assert.match(text, /console-mine/);
  assert.doesNotMatch(text, /console-theirs/);
  await shoot(page, 'jobs-member');
  await axe(page, 'jobs-member');
  /* the name search */
  await page.fill('#f-name', 'mine');
  await page.press('#f-name', 'Enter');
  await page.waitForFunction(() => location.hash.includes('name=mine'));
  await ready(page, 'jobs');
  const rows = await page.$$eval('tbody tr[data-job-id]', (trs) => trs.map((t) => t.textContent));
  assert.ok(rows.length >= 1 && rows.every((t) => t.includes('mine')), rows.join('|'));
  /* another team's job */
  await page.evaluate((id) => { location.hash = `#/teams/team-b/jobs/${id}`; }, theirs.id);
  await ready(page, 'job');
  await page.waitForSelector('.problem');
  assert.match(await page.textContent('.problem'), /not found/i);
  await shoot(page, 'job-other-team');
  await context.close();
});

test('a member submits through the form and watches it go PENDING → RUNNING → SUCCEEDED, its log lines appearing', async () => {
  const { page, context } = await open(member, '#/submit');
  await ready(page, 'submit');
  await page.fill('#sf-name', 'console-form-job');
  await page.selectOption('#sf-queue', 'lp');
  await page.fill('#sf-task-gpu', '1');
  await page.fill('#sf-labels', 'experiment=console');
  await shoot(page, 'submit-form');
  await axe(page, 'submit-form');
  await page.click('form.submit-form button[type="submit"]');
  await page.waitForFunction(() => /#\/teams\/team-a\/jobs\/j-/.test(location.hash));
  await ready(page, 'job');
  const seen = [];
  let loggedWhileRunning = false;
  const deadline = Date.now() + 90000;
  for (;;) {
    const st = await page.getAttribute('[data-view="job"]', 'data-state');
    if (seen[seen.length - 1] !== st) seen.push(st);
    /* the log pane follows: a task's first line shows while it runs */
    if (st === 'RUNNING' && !loggedWhileRunning) {
      loggedWhileRunning = /hello from task 0 of gpugate-j-/.test(await page.textContent('pre.log'));
      if (loggedWhileRunning) await shoot(page, 'job-log-running');
    }
    if (st === 'RUNNING' && !fs.existsSync(path.join(shots, 'job-running.png'))) await shoot(page, 'job-running');
    if (st === 'SUCCEEDED' || Date.now() > deadline) break;
    await page.waitForTimeout(250);
  }
  assert.equal(seen[seen.length - 1], 'SUCCEEDED', `states seen: ${seen.join(' → ')}`);
  assert.ok(seen.includes('RUNNING'), `states seen: ${seen.join(' → ')}`);
  /* the timeline lists the whole way, in order */
  const steps = await page.$$eval('.timeline li', (lis) => lis.map((l) => l.dataset.to));
  assert.equal(steps[0], 'PENDING');
  assert.ok(steps.indexOf('RUNNING') > 0 && steps.indexOf('SUCCEEDED') > steps.indexOf('RUNNING'), steps.join(','));
  /* the stream ended with the job: its whole log, each line with its
   * attempt and task, and no reload */
  await page.waitForFunction(() => document.querySelector('[data-log-state]')?.dataset.logState === 'ended', null, { timeout: 60000 });
  const log = await page.textContent('pre.log');
  assert.match(log, /\[attempt 1 task 0\] hello from task 0 of gpugate-j-[a-z0-9]+-a1\n/);
  assert.match(log, /\[attempt 1 task 0\] task 0 of gpugate-j-[a-z0-9]+-a1 done\n/);
  assert.ok(log.indexOf('hello from task 0') < log.indexOf('done'), log);
  assert.ok(loggedWhileRunning, `no log line showed while the job ran; the log: ${log}`);
  await shoot(page, 'job-succeeded');
  await axe(page, 'job-page');
  await context.close();
});

test('a job\'s page follows the event stream: its state changes without a reload or a poll', async () => {
  const job = await submitJob(member, 'team-a', 'console-live-job');
  const { page, context } = await open(member, `#/teams/team-a/jobs/${job.id}`);
  await ready(page, 'job');
  await page.waitForSelector('[data-live-status][data-live="on"]', { timeout: 20000 });
  const first = await page.getAttribute('[data-view="job"]', 'data-state');
  /* a mark that a reload would wipe, and every GET of the job from now on */
  await page.evaluate(() => { window.liveMark = 'kept'; });
  const navigations = [];
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
  const gets = [];
  page.on('request', (r) => { if (r.url().endsWith(`/jobs/${job.id}`) && r.method() === 'GET') gets.push(Date.now()); });
  await page.waitForFunction((s0) => {
    const s = document.querySelector('[data-view="job"]')?.dataset.state;
    return s && s !== s0 && s !== 'ADMITTED' && s !== 'QUEUED';
  }, first, { timeout: 60000 });
  const later = await page.getAttribute('[data-view="job"]', 'data-state');
  assert.notEqual(later, first);
  assert.equal(await page.evaluate(() => window.liveMark), 'kept', 'the page was reloaded');
  assert.deepEqual(navigations, [], 'the page navigated');
  assert.ok(gets.length > 0, 'the job was never fetched again');
  assert.equal(await page.getAttribute('[data-live-status]', 'data-live'), 'on');
  await shoot(page, 'job-live');
  await context.close();
});

test('the console says so when the event stream is down, and polls instead', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.route('**/v1/teams/team-a/events', (r) => r.abort());
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const lists = [];
  page.on('request', (r) => { if (r.url().includes('/v1/teams/team-a/jobs?')) lists.push(r.url()); });
  await page.goto(`${base}/#token=${member}`);
  await page.waitForSelector('[data-view="confirm-token"][data-ready]');
  await page.click('#use-token');
  await page.waitForSelector('[data-view="overview"][data-ready]');
  await page.evaluate(() => { location.hash = '#/jobs'; });
  await ready(page, 'jobs');
  await page.waitForSelector('[data-live="off"]', { timeout: 20000 });
  assert.match(await page.textContent('[data-live="off"]'), /Live updates unavailable/);
  const before = lists.length;
  const deadline = Date.now() + 20000;
  while (lists.length <= before && Date.now() < deadline) await page.waitForTimeout(250);
  assert.ok(lists.length > before, 'the list was not polled while the stream was down');
  await shoot(page, 'jobs-stream-down');
  await context.close();
});

test('a member cancels another job from its page', async () => {
  const job = await submitJob(member, 'team-a', 'console-cancel-me', { task: { image: 'us-docker.pkg.dev/p/r/trainer:1.2', cpu_milli: 1000, memory_mib: 4096, gpu: 1 } });
  const { page, context } = await open(member, `#/teams/team-a/jobs/${job.id}`);
  await ready(page, 'job');
  await page.click('text=Cancel job…');
  await page.click('[data-confirm-cancel]');
  await page.waitForFunction(() => document.querySelector('[data-view="job"]')?.dataset.state === 'CANCELLED', null, { timeout: 30000 });
  const r = await api(member, 'GET', `/v1/teams/team-a/jobs/${job.id}`);
  assert.equal(r.json.state, 'CANCELLED');
  assert.equal(dialogs.length, 0, 'no browser dialogs');
  await shoot(page, 'job-cancelled');
  await context.close();
});

test('a bad submission shows the API\'s field errors next to the fields', async () => {
  const { page, context } = await open(member, '#/submit');
  await ready(page, 'submit');
  await page.fill('#sf-name', 'Not A Name');
  await page.fill('#sf-task-cpu-milli', '0');
  await page.click('form.submit-form button[type="submit"]');
  await page.waitForSelector('.field-error[data-error-for="name"]');
  await page.waitForSelector('.field-error[data-error-for="task.cpu_milli"]');
  assert.equal(await page.getAttribute('#sf-name', 'aria-invalid'), 'true');
  assert.match(await page.textContent('.problem'), /invalid/i);
  /* the form stays where it was: nothing was submitted */
  assert.match(await page.evaluate(() => location.hash), /#\/submit/);
  await shoot(page, 'submit-errors');
  await axe(page, 'submit-errors');
  await context.close();
});

test('an admin sees every cluster queue, with usage bars that match GET /v1/cluster-queues', async () => {
  await submitJob(member, 'team-a', 'console-usage');
  await submitJob(memberB, 'team-b', 'console-usage-b');
  await new Promise((r) => setTimeout(r, 1500));
  const { page, context } = await open(admin, '#/queues');
  await ready(page, 'queues');
  const cqs = [];
  for (let cursor = null, i = 0; i < 10; i++) {
    const r = await api(admin, 'GET', `/v1/cluster-queues?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    cqs.push(...r.json.items);
    cursor = r.json.next_cursor;
    if (!cursor) break;
  }
  assert.equal(cqs.length, 13);
  await shoot(page, 'queues-admin');
  const bars = await page.$$eval('.bar[data-cq]', (els) => els.map((e) => ({ ...e.dataset })));
  let checked = 0;
  for (const cq of cqs) {
    assert.ok(await page.$(`article[data-cq="${cq.name}"]`), `${cq.name} shown`);
    for (const u of cq.status.usage) {
      const b = bars.find((x) => x.cq === cq.name && x.flavor === u.flavor && x.resource === u.resource);
      assert.ok(b, `${cq.name} ${u.flavor} ${u.resource} has a bar`);
      assert.equal(Number(b.total), u.total);
      assert.equal(Number(b.nominal), u.nominal);
      assert.equal(Number(b.borrowed), u.borrowed);
      assert.equal(b.borrowingLimit, u.borrowing_limit === null ? 'unlimited' : String(u.borrowing_limit));
      checked++;
    }
  }
  assert.ok(checked > 13);
  assert.ok(bars.some((b) => Number(b.total) > 0), 'some queue is in use');
  await axe(page, 'queues-admin');
  await page.evaluate(() => { location.hash = '#/'; });
  await ready(page, 'overview');
  await shoot(page, 'overview-admin');
  await axe(page, 'overview-admin');
  /* every team's jobs, then one team's through the picker */
  await page.evaluate(() => { location.hash = '#/jobs'; });
  await ready(page, 'jobs');
  const teams = await page.$$eval('tbody tr[data-job-id] td:first-child', (tds) => [...new Set(tds.map((t) => t.textContent))].sort());
  assert.ok(teams.includes('team-a') && teams.includes('team-b'), teams.join(','));
  await shoot(page, 'jobs-admin');
  await axe(page, 'jobs-admin');
  await page.selectOption('#f-team', 'team-b');
  await page.waitForFunction(() => location.hash.includes('team=team-b'));
  await page.waitForSelector('h1:has-text("Jobs of team-b")');
  await ready(page, 'jobs');
  const names = await page.$$eval('tbody tr[data-job-id] th a', (as) => as.map((a) => a.textContent));
  const want = (await api(admin, 'GET', '/v1/teams/team-b/jobs?limit=50')).json.items.map((j) => j.name);
  assert.ok(names.length > 0);
  assert.deepEqual(names, want);
  await context.close();
});

function billingRows() {
  const now = new Date();
  const lines = [];
  let n = 0;
  for (const team of ['team-a', 'team-b']) {
    for (let k = 0; k < 3; k++) {
      const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), k, 0, 0));
      if (k > now.getUTCHours()) start.setUTCHours(0);
      const cost = (team === 'team-a' ? 12.345678 : 7.005) + k * 1.111111;
      n++;
      lines.push(JSON.stringify({
        billing_account_id: '01A2B3-C4D5E6-F7A8B9',
        service: { id: '6F81-5844-456A', description: 'Compute Engine' },
        sku: { id: k === 2 ? '5C1A-8B3D-2E4F' : '39D8-7A2B-1F3E', description: k === 2 ? 'Spot Preemptible Nvidia L4 GPU running in Americas' : 'Nvidia L4 GPU running in Americas' },
        usage_start_time: start.toISOString().replace('.000Z', 'Z'),
        usage_end_time: new Date(start.getTime() + 3600e3).toISOString().replace('.000Z', 'Z'),
        project: { id: 'console-project', name: 'console-project' },
        labels: [{ key: 'gpugate-team', value: team }, { key: 'gpugate-flavor', value: k === 2 ? 'l4-spot' : 'l4-on-demand' }, { key: 'row', value: String(n) }],
        system_labels: [],
        location: { location: 'us-central1', country: 'US', region: 'us-central1', zone: 'us-central1-a' },
        export_time: new Date(start.getTime() + 4 * 3600e3).toISOString().replace('.000Z', 'Z'),
        cost: Number(cost.toFixed(6)),
        currency: 'USD',
        currency_conversion_rate: 1,
        usage: { amount: 3600, unit: 'seconds', amount_in_pricing_units: 1, pricing_unit: 'hour' },
        credits: k === 1 ? [{ name: 'Committed use discount', amount: -0.333333, type: 'COMMITTED_USAGE_DISCOUNT' }] : [],
        invoice: { month: start.toISOString().slice(0, 7).replace('-', '') },
        cost_type: 'regular',
      }));
    }
  }
  return `${lines.join('\n')}\n`;
}

test('finance sees per-team costs that match GET /v1/costs to the cent, and downloads the CSV', async () => {
  const ingest = await api(finance, 'POST', '/v1/billing/export-rows', billingRows(), { 'Content-Type': 'application/x-ndjson' });
  assert.equal(ingest.status, 200, ingest.text);
  assert.equal(ingest.json.rejected.length, 0, ingest.text);
  const today = new Date().toISOString().slice(0, 10);
  const from = `${today.slice(0, 7)}-01`;
  const { page, context } = await open(finance, `#/costs?from=${from}&to=${today}&by=team`);
  await ready(page, 'costs');
  const report = (await api(finance, 'GET', `/v1/costs?from=${from}&to=${today}`)).json;
  assert.ok(report.rows.length >= 2);
  for (const row of report.rows) {
    const cell = page.locator(`table.per-team tr[data-team="${row.team}"] td[data-net]`);
    assert.match(await cell.getAttribute('data-net'), new RegExp(`${row.currency}:${String(row.net_cost).replace('.', '\\.')}(\\s|$)`));
    const shown = (await cell.textContent()).replace(/[^0-9.-]/g, '');
    assert.equal(Math.round(Number(shown) * 100), Math.round(Number(row.net_cost) * 100), `${row.team}: ${shown} vs ${row.net_cost}`);
  }
  for (const t of report.totals) {
    const li = page.locator(`ul.totals li[data-currency="${t.currency}"]`).first();
    assert.equal(await li.getAttribute('data-net'), String(t.net_cost));
  }
  await shoot(page, 'costs-finance');
  await axe(page, 'costs-finance');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('button[data-csv^="/v1/costs?"]:has-text("this table")'),
  ]);
  const file = await download.path();
  const csv = fs.readFileSync(file, 'utf8');
  const want = await api(finance, 'GET', `/v1/costs?from=${from}&to=${today}`, undefined, { Accept: 'text/csv' });
  assert.equal(csv, want.text);
  assert.match(csv.split('\n')[0], /team/);
  /* how fresh, which months are closed: as the API says */
  assert.equal(await page.getAttribute('p.freshness', 'data-through'), report.data_through || '');
  for (const m of report.months) {
    assert.equal(await page.getAttribute(`p.freshness [data-month="${m.month}"]`, 'data-closed'), String(m.closed));
  }
  /* FOCUS of every team: the API's bytes */
  const [focusDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('button[data-csv^="/v1/costs/focus?"]'),
  ]);
  const focus = fs.readFileSync(await focusDl.path(), 'utf8');
  assert.equal(focus, (await api(finance, 'GET', `/v1/costs/focus?from=${from}&to=${today}`)).text);
  assert.match(focus.split('\r\n')[0], /^BilledCost,BillingAccountId,BillingAccountName,/);
  assert.ok(focus.split('\r\n').length > 2);
  /* closing last month: asked first, in the page; then closed by finance */
  const d = new Date();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() - 1);
  const prev = d.toISOString().slice(0, 7);
  await page.click(`button[data-close="${prev}"]`);
  await page.waitForSelector(`button[data-confirm-close="${prev}"]`);
  await shoot(page, 'costs-close-confirm');
  assert.equal((await api(finance, 'GET', '/v1/costs/months')).json.months.some((m) => m.month === prev && m.state === 'closed'), false);
  await page.click(`button[data-confirm-close="${prev}"]`);
  await page.waitForSelector(`tr[data-month="${prev}"] [data-state="closed"]`, { timeout: 20000 });
  const closed = (await api(finance, 'GET', '/v1/costs/months')).json.months.find((m) => m.month === prev);
  assert.equal(closed.state, 'closed');
  assert.equal(closed.closed_by, 'finance:finance');
  assert.equal(await page.locator(`button[data-close="${utcMonth()}"]`).count(), 0, 'the current month cannot be closed');
  await axe(page, 'costs-months');
  await page.evaluate(() => { location.hash = '#/'; });
  await ready(page, 'overview');
  await shoot(page, 'overview-finance');
  await axe(page, 'overview-finance');
  await context.close();
});

test('a member\'s costs and queues views show her team only', async () => {
  const { page, context } = await open(member, '#/costs');
  await ready(page, 'costs');
  assert.doesNotMatch(await page.textContent('[data-view="costs"]'), /team-b/);
  assert.equal(await page.locator('button[data-close]').count(), 0, 'members close no month');
  assert.equal(await page.locator('button[data-csv^="/v1/costs/focus"]').count(), 0);
  const focusPath = await page.getAttribute('button[data-csv^="/v1/teams/team-a/costs/focus?"]', 'data-csv');
  const [focusDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('button[data-csv^="/v1/teams/team-a/costs/focus?"]'),
  ]);
  const focus = fs.readFileSync(await focusDl.path(), 'utf8');
  assert.equal(focus, (await api(member, 'GET', focusPath)).text);
  const lines = focus.split('\r\n').filter((l) => l);
  assert.match(lines[0], /,x_Team,x_Flavor$/);
  assert.ok(lines.length > 1);
  for (const l of lines.slice(1)) assert.equal(l.split(',').at(-2), 'team-a', l);
  await shoot(page, 'costs-member');
  await axe(page, 'costs-member');
  await page.evaluate(() => { location.hash = '#/queues'; });
  await ready(page, 'queues');
  const text = await page.textContent('[data-view="queues"]');
  assert.doesNotMatch(text, /cq-team-b|cq-team-c/);
  assert.match(text, /cq-team-a-lp/);
  await shoot(page, 'queues-member');
  await axe(page, 'queues-member');
  await page.click('a[href="#/teams/team-a/queues/lp"]');
  await ready(page, 'pending');
  await axe(page, 'pending');
  await context.close();
});

test('polling revalidates: an unchanged list is a 304', async () => {
  const { page, context } = await open(member);
  const statuses = [];
  page.on('response', (r) => { if (r.url().includes('/v1/teams/team-a/jobs?')) statuses.push(r.status()); });
  await page.evaluate(() => { location.hash = '#/jobs?state=SUCCEEDED'; });
  await ready(page, 'jobs');
  await page.waitForSelector('[data-live="on"]', { timeout: 20000 });
  /* an event of the team makes the list revalidate: unchanged, a 304 */
  await submitJob(member, 'team-a', 'console-revalidate');
  const deadline = Date.now() + 20000;
  while (!statuses.includes(304) && Date.now() < deadline) await page.waitForTimeout(250);
  assert.ok(statuses.includes(200) && statuses.includes(304), statuses.join(','));
  await context.close();
});

/* 10,000 finished jobs of team-c, stored directly (submitting them through
 * the API would also run them): the console pages through them 50 at a
 * time with the API's cursors. The times are reported, not asserted. */
test('a team with 10,000 jobs pages smoothly', async (t) => {
  execFileSync('psql', [process.env.CONSOLE_DB, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c',
    `INSERT INTO jobs (id, team, queue, cluster_queue, name, priority_class, priority, can_preempt, state, gpu, cpu_milli, memory_mib, max_run_duration_s, spec, created_at, finished_at)
     SELECT 'j-bulk' || lpad(i::text, 8, '0'), 'team-c', 'lp', 'cq-team-c-lp', 'bulk-' || i, 'default', 10, false,
            (ARRAY['SUCCEEDED', 'FAILED', 'CANCELLED'])[1 + i % 3], 2, 2000, 10240, 3600, '{}'::json,
            now() - (i || ' seconds')::interval, now()
     FROM generate_series(1, 10000) i`]);
  const memberC = token('team-c', 'member');
  const { page, context } = await open(memberC);
  const started = Date.now();
  await page.evaluate(() => { location.hash = '#/jobs'; });
  await ready(page, 'jobs');
  const first = Date.now() - started;
  assert.match(await page.textContent('ul.counts'), /SUCCEEDED\s*3,333/);
  const seen = new Set();
  const pageTimes = [];
  for (let i = 0; i < 5; i++) {
    const ids = await page.$$eval('tbody tr[data-job-id]', (trs) => trs.map((r) => r.dataset.jobId));
    assert.equal(ids.length, 50);
    for (const id of ids) {
      assert.ok(!seen.has(id), `${id} shown twice`);
      seen.add(id);
    }
    const t0 = Date.now();
    const before = ids[0];
    await page.click('a[data-next]');
    await page.waitForFunction((b) => {
      const r = document.querySelector('[data-view="jobs"][data-ready] tbody tr[data-job-id]');
      return r && r.dataset.jobId !== b;
    }, before);
    pageTimes.push(Date.now() - t0);
  }
  /* the name search still answers from one team's rows */
  await page.evaluate(() => { location.hash = '#/jobs?name=bulk-9999'; });
  await page.waitForFunction(() => location.hash.includes('bulk-9999'));
  await page.waitForSelector('tbody tr[data-job-id] >> text=bulk-9999');
  t.diagnostic(`first page ${first} ms; next pages ${pageTimes.join(', ')} ms`);
  await shoot(page, 'jobs-10000');
  await context.close();
});

test('usable at phone width', async () => {
  const { page, context } = await open(member, '#/jobs', { width: 390, height: 844 });
  await ready(page, 'jobs');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `page wider than the phone by ${overflow}px`);
  await shoot(page, 'jobs-phone');
  await context.close();
});

test('an expired token returns to sign-in; a bad pasted token is refused', async () => {
  const short = token('team-a', 'member', 8);
  const { page, context } = await open(short, '', undefined, false);
  /* signed in first (who you are is shown), then out at expiry */
  await page.waitForSelector('#who .who-id');
  await page.waitForSelector('[data-view="signin"]', { timeout: 20000 });
  assert.match(await page.textContent('[data-view="signin"]'), /expired/i);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('gpugate.token')), null);
  await shoot(page, 'signin-expired');
  await axe(page, 'signin');
  await page.fill('#token-input', 'not-a-token');
  await page.click('button[type="submit"]');
  await page.waitForSelector('[data-view="signin"] .notice');
  assert.match(await page.textContent('[data-view="signin"]'), /sign in again/i);
  /* and a good one signs in */
  await page.fill('#token-input', member);
  await page.click('button[type="submit"]');
  await ready(page, 'overview');
  await context.close();
});

test('nothing left the origin, nothing broke the CSP, no script error, no serious accessibility violation', () => {
  assert.deepEqual(offOrigin, []);
  assert.deepEqual(cspViolations, []);
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(axeFindings, [], JSON.stringify(axeFindings, null, 1));
});
