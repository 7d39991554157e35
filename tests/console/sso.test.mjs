/*
 * sso.test.mjs — the console's single sign-on in Debian's Chromium against
 * a real OpenID Provider (tests/oidc/provider.mjs): a second gpugate
 * replica on the console suite's database, configured for the provider,
 * and a person (bob, in groups ml-team-a and ml-team-b) who goes console →
 * provider's login and consent pages → back to the console, signed in by
 * the server's session cookie. Then: who is signed in, the team switcher,
 * jobs listed, the cookie out of the page's reach, a cross-site logout
 * refused, and the real logout. Then: the sign-in bound to its browser by
 * the flow cookie (an attacker's callback URL opened by a signed-in victim
 * is refused and leaves her session as it was), the provider's
 * Back-Channel Logout ending the console's session, and a person who loses
 * a group at the provider losing its team in the console once the session
 * is refreshed (GPUGATE_SESSION_REFRESH_S is 1 here), and a session
 * without a refresh token that ends with its ID token returning through
 * /auth/login with prompt=none, without the provider's pages.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = process.env.CONSOLE_ROOT;
const require = createRequire(path.join(root, 'deploy/tools/package.json'));
const { chromium } = require('playwright-core');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gpugate-sso-'));
let browser, provider, server, base, issuer;
const pageErrors = [];

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/* Start a child and wait for a line matching re on its stdout. */
function startUntil(cmd, args, env, re) {
  return new Promise((resolve, reject) => {
    const log = fs.openSync(path.join(work, `${path.basename(args[0] || cmd)}.log`), 'a');
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', log] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start: ${out}`)), 20000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(re);
      if (m) { clearTimeout(timer); resolve({ child, m }); }
    });
    child.on('exit', (code) => reject(new Error(`${cmd} exited ${code}: ${out}`)));
  });
}

async function waitHealthy(url) {
  for (let i = 0; i < 200; i++) {
    try { if ((await fetch(`${url}/healthz`)).ok) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become healthy`);
}

const admin = () => execFileSync(path.join(root, 'build/gpugate'), ['token', '--role', 'admin', '--ttl', '3600'],
  { env: process.env }).toString().trim();

async function api(method, p, body) {
  const r = await fetch(base + p, {
    method, headers: { Authorization: `Bearer ${admin()}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json().catch(() => null) };
}

before(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const p = await startUntil('node', [path.join(root, 'tests/oidc/provider.mjs'), '--keys', path.join(work, 'keys.json'),
    '--redirect', `${base}/auth/callback`], process.env, /port (\d+)\n/);
  provider = p.child;
  issuer = `http://127.0.0.1:${p.m[1]}`;
  fs.writeFileSync(path.join(work, 'client-secret'), 'console-secret-0123456789abcdef\n', { mode: 0o600 });
  server = spawn(path.join(root, 'build/gpugate'), ['serve'], {
    env: {
      ...process.env,
      GPUGATE_DATABASE_URL: process.env.CONSOLE_DB,
      GPUGATE_LISTEN: `127.0.0.1:${port}`,
      GPUGATE_OIDC_ISSUERS: issuer,
      GPUGATE_OIDC_AUDIENCES: 'gpugate',
      GPUGATE_OIDC_CLIENT_ID: 'gpugate-console',
      GPUGATE_OIDC_CLIENT_SECRET_FILE: path.join(work, 'client-secret'),
      GPUGATE_PUBLIC_URL: base,
      GPUGATE_RATE_LIMIT_RPS: '0',
      /* sessions re-validated at the provider every second */
      GPUGATE_SESSION_REFRESH_S: '1',
    },
    stdio: ['ignore', 'ignore', fs.openSync(path.join(work, 'gpugate.log'), 'a')],
  });
  await waitHealthy(base);
  for (const [name, group, team] of [['sso-a', 'ml-team-a', 'team-a'], ['sso-b', 'ml-team-b', 'team-b']]) {
    const r = await api('PUT', `/v1/access-bindings/${name}`, { subjects: [{ kind: 'group', name: group }], role: 'member', team });
    assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.json));
  }
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (base) {
    await api('DELETE', '/v1/access-bindings/sso-a').catch(() => {});
    await api('DELETE', '/v1/access-bindings/sso-b').catch(() => {});
  }
  for (const c of [server, provider]) if (c) c.kill('SIGTERM');
  assert.deepEqual(pageErrors, [], 'no script errors');
  if (process.env.SSO_KEEP) console.error(`sso: kept ${work}`);
  else fs.rmSync(work, { recursive: true, force: true });
});

test('sign in with the provider, see who and which teams, list jobs, sign out', async () => {
  const job = await api('POST', '/v1/teams/team-b/jobs', {
    name: 'sso-listed', queue: 'lp',
    task: { image: 'us-docker.pkg.dev/p/r/trainer:1.2', commands: ['python', 'train.py'], cpu_milli: 1000, memory_mib: 4096, gpu: 1 },
  });
  assert.equal(job.status, 201, JSON.stringify(job.json));

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${base}/`);
  await page.waitForSelector('[data-view="signin"][data-ready]');
  const sso = page.locator('#sso');
  assert.equal(await sso.textContent(), `Sign in with 127.0.0.1:${new URL(issuer).port}`);

  /* the provider's own pages */
  await sso.click();
  await page.waitForURL(`${issuer}/interaction/**`);
  await page.fill('input[name="login"]', 'bob');
  await page.fill('input[name="password"]', 'any');
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached' });
  await page.click('button[type="submit"]');

  /* back at the console, signed in by the server's session */
  await page.waitForURL(`${base}/**`);
  await page.waitForSelector('[data-view="overview"][data-ready]', { timeout: 20000 });
  assert.equal(await page.locator('.who-name').getAttribute('data-who'), 'bob@example.com');
  const options = await page.locator('#team-switch option').allTextContents();
  assert.deepEqual(options.sort(), ['team-a', 'team-b']);
  assert.equal(await page.evaluate(() => document.cookie), '', 'the session cookie is HttpOnly');
  const cookies = await context.cookies();
  const c = cookies.find((k) => k.name === '__Host-gpugate_session');
  assert.ok(c && c.httpOnly && c.secure && c.sameSite === 'Strict', JSON.stringify(cookies));

  /* the team switcher, then the jobs of team-b */
  await page.selectOption('#team-switch', 'team-b');
  await page.evaluate(() => { location.hash = '#/jobs'; });
  await page.waitForSelector('[data-view="jobs"][data-ready]', { timeout: 20000 });
  await page.waitForSelector('text=sso-listed');

  /* without the CSRF header, the session does not count */
  const noHeader = await page.evaluate(async () => (await fetch('/auth/logout', { method: 'POST' })).status);
  assert.equal(noHeader, 403);
  const noHeaderRead = await page.evaluate(async () => (await fetch('/v1/whoami')).status);
  assert.equal(noHeaderRead, 403);
  /* a cross-site form post from another origin (the provider's) changes nothing */
  const other = await context.newPage();
  await other.goto(`${issuer}/.well-known/openid-configuration`);
  await other.evaluate(async (u) => {
    await fetch(u, { method: 'POST', mode: 'no-cors', credentials: 'include', body: 'x=1',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  }, `${base}/auth/logout`);
  const still = await page.evaluate(async () =>
    (await fetch('/v1/whoami', { headers: { 'X-GPUGate-CSRF': '1' } })).json());
  assert.equal(still.via, 'session');
  assert.equal(still.email, 'bob@example.com');

  /* sign out: the session ends on the server */
  await page.click('text=Sign out');
  await page.waitForSelector('[data-view="signin"][data-ready]');
  const after = await page.evaluate(async () =>
    (await fetch('/v1/whoami', { headers: { 'X-GPUGate-CSRF': '1' } })).status);
  assert.equal(after, 401);
  await context.close();
});

/* Sign in as user in context (a browser of its own) through the provider's
 * pages; stop at gpugate's callback (not followed) when stop is true and
 * return its URL. */
async function signIn(context, user, stop = false) {
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  let callback = null;
  if (stop) {
    /* the attacker keeps his callback URL unused: his browser drops its own
     * flow cookie, so gpugate refuses (and does not take) his state */
    page.on('request', (r) => {
      if (r.url().startsWith(`${base}/auth/callback?`)) callback = r.url();
    });
  }
  await page.goto(`${base}/`);
  await page.waitForSelector('[data-view="signin"][data-ready]');
  await page.locator('#sso').click();
  await page.waitForURL(`${issuer}/interaction/**`);
  /* the flow cookie: HttpOnly, Secure, SameSite=Lax, ten minutes */
  const flow = (await context.cookies()).find((k) => k.name === '__Host-gpugate_flow');
  assert.ok(flow && flow.httpOnly && flow.secure && flow.sameSite === 'Lax' && flow.path === '/',
    JSON.stringify(flow));
  assert.ok(flow.expires - Date.now() / 1000 > 590 && flow.expires - Date.now() / 1000 <= 600, String(flow.expires));
  if (stop) await context.clearCookies({ name: '__Host-gpugate_flow' });
  await page.fill('input[name="login"]', user);
  await page.fill('input[name="password"]', 'any');
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached' });
  await page.click('button[type="submit"]');
  if (stop) {
    for (let i = 0; i < 200 && !callback; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(callback, 'the provider did not send the browser back');
    return { page, callback };
  }
  await page.waitForSelector('[data-view="overview"][data-ready]', { timeout: 20000 });
  return { page, callback: null };
}

const whoami = (page) => page.evaluate(async () => {
  const r = await fetch('/v1/whoami', { headers: { 'X-GPUGate-CSRF': '1' } });
  return { status: r.status, body: r.ok ? await r.json() : null };
});

test('an attacker\'s callback URL opened in a signed-in victim\'s browser is refused; her session is untouched', async () => {
  const victim = await browser.newContext();
  const { page } = await signIn(victim, 'bob');
  assert.equal((await whoami(page)).body.email, 'bob@example.com');
  assert.equal((await victim.cookies()).find((k) => k.name === '__Host-gpugate_flow'), undefined,
    'the flow cookie is cleared once used');

  /* the attacker signs in as himself and keeps the callback URL */
  const attacker = await browser.newContext();
  const { callback } = await signIn(attacker, 'eve', true);
  assert.match(callback, /\/auth\/callback\?code=/);

  /* the victim opens it: refused, with a page saying why */
  const lure = await victim.newPage();
  const resp = await lure.goto(callback);
  assert.equal(resp.status(), 400);
  assert.match(await lure.textContent('body'), /not started in this browser/);
  /* still bob, not eve */
  const still = await whoami(page);
  assert.equal(still.status, 200);
  assert.equal(still.body.email, 'bob@example.com');
  await attacker.close();
  await victim.close();
});

test('the provider\'s back-channel logout ends the console\'s session', async () => {
  const context = await browser.newContext();
  const { page } = await signIn(context, 'bob');
  assert.equal((await whoami(page)).status, 200);
  /* sign out at the provider (RP-initiated logout page, "yes"): it posts a
   * logout_token to gpugate's /auth/backchannel-logout */
  const op = await context.newPage();
  await op.goto(`${issuer}/session/end`);
  await op.click('button[name="logout"][value="yes"]');
  await op.waitForLoadState();
  let st = 200;
  for (let i = 0; i < 200 && st === 200; i++) {
    st = (await whoami(page)).status;
    if (st === 200) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(st, 401, 'the session outlived the provider\'s logout');
  /* the console, reloaded, asks to sign in again */
  await page.reload();
  await page.waitForSelector('[data-view="signin"][data-ready]');
  await context.close();
});

test('a refreshed session losing its group loses its grant', async () => {
  const groups = (g) => fetch(`${issuer}/test/accounts/cat`, {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ groups: g }),
  });
  assert.equal((await groups(['ml-team-a', 'ml-team-b'])).status, 204);
  const context = await browser.newContext();
  try {
    const { page } = await signIn(context, 'cat');
    assert.deepEqual((await page.locator('#team-switch option').allTextContents()).sort(), ['team-a', 'team-b']);

    /* cat leaves ml-team-b at the provider: the next refresh drops team-b */
    assert.equal((await groups(['ml-team-a'])).status, 204);
    let me = await whoami(page);
    for (let i = 0; i < 300 && me.status === 200 && me.body.grants.length !== 1; i++) {
      await new Promise((r) => setTimeout(r, 100));
      me = await whoami(page);
    }
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.grants.map((g) => g.team), ['team-a'], JSON.stringify(me.body));

    /* the console, reloaded, has no team to switch to (team-a alone);
     * team-b's jobs are gone */
    await page.reload();
    await page.waitForSelector('[data-view="overview"][data-ready]', { timeout: 20000 });
    assert.equal(await page.locator('#team-switch').count(), 0);
    const teamB = await page.evaluate(async () =>
      (await fetch('/v1/teams/team-b/jobs', { headers: { 'X-GPUGate-CSRF': '1' } })).status);
    assert.equal(teamB, 404);
  } finally {
    await groups(['ml-team-a', 'ml-team-b']);
    await context.close();
  }
});

test('without a refresh token an ended session returns through /auth/login, prompt=none first', async () => {
  const psql = (sql) => execFileSync('psql', [process.env.CONSOLE_DB, '-X', '-q', '-t', '-A', '-c', sql]).toString().trim();
  const context = await browser.newContext();
  try {
    const { page } = await signIn(context, 'ann');
    /* ann's session as one the provider gave no refresh token */
    assert.equal(psql("WITH s AS (UPDATE sessions SET refresh_sealed = NULL WHERE subject = 'ann' RETURNING 1) SELECT count(*) FROM s"), '1');
    const seen = [];
    page.on('request', (r) => { if (r.isNavigationRequest()) seen.push(r.url()); });
    /* its ID token's end: the session ends (every replica within a second) */
    psql("UPDATE sessions SET expires_at = now() - interval '1 s' WHERE subject = 'ann'");
    let st = 200;
    for (let i = 0; i < 300 && st === 200; i++) {
      st = (await whoami(page)).status;
      if (st === 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(st, 401);
    /* the console's next read finds it ended and returns silently */
    await page.evaluate(() => { location.hash = '#/jobs'; });
    await page.waitForURL(`${base}/auth/login?prompt=none`, { waitUntil: 'commit', timeout: 30000 }).catch(() => {});
    await page.waitForURL(`${base}/`, { timeout: 30000 });
    await page.waitForSelector('[data-view="overview"][data-ready]', { timeout: 30000 });
    assert.ok(seen.some((u) => u.startsWith(`${base}/auth/login?prompt=none`)), seen.join(' '));
    assert.ok(seen.some((u) => u.startsWith(`${issuer}/auth`) && u.includes('prompt=none')), seen.join(' '));
    assert.ok(!seen.some((u) => u.includes('/interaction/')), `a provider page was shown: ${seen.join(' ')}`);
    const me = await whoami(page);
    assert.equal(me.status, 200);
    assert.equal(me.body.email, 'ann@example.com');
  } finally {
    await context.close();
  }
});
