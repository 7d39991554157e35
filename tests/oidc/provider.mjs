// tests/oidc/provider.mjs — a real, certified OpenID Provider for the test
// suite: panva's oidc-provider (pinned in deploy/tools), never a mock.
//
//   node tests/oidc/provider.mjs --keys FILE [--port N] [--hd DOMAIN]
//
// Listens on 127.0.0.1 (port N, or a free one), issuer
// http://127.0.0.1:PORT, and prints "port PORT" once it serves. Its signing
// keys — one RS256, one ES256 — are read from FILE, or generated and
// written there when FILE does not exist (a new FILE is a key rotation).
//
// Test users (code flow, devInteractions: any password) carry email and
// groups. Clients with client credentials get JWT access tokens (typ
// at+jwt) for the resource indicators below; each client stands for a
// principal (a CI service account, a person) and its tokens carry that
// principal's email and groups, as a provider's claim mappers would.
// --hd gives every principal of the organisation that hosted domain
// instead of example.com: a second instance stands in for another issuer of
// the same organisation (Google for service accounts), whose principals
// have the same sub and group names as the first's.
// The console's client is registered for Back-Channel Logout at the
// redirect's origin (/auth/backchannel-logout).
// GET /test/jwks-fetches answers how many times the key set was fetched.
// The console's client gets refresh tokens; PUT /test/accounts/ID with
// {"groups": [...]} changes a person's groups at run time, DELETE
// /test/accounts/ID removes the person (a refresh is then refused), as an
// administrator would at a real IdP.
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'deploy/tools/package.json'));
const { default: Provider } = await import(
  require.resolve('oidc-provider'));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};

function keys(file) {
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8'));
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const id = crypto.randomBytes(6).toString('hex');
  const set = {
    keys: [
      { ...rsa.privateKey.export({ format: 'jwk' }), kid: `rs-${id}`, alg: 'RS256', use: 'sig' },
      { ...ec.privateKey.export({ format: 'jwk' }), kid: `es-${id}`, alg: 'ES256', use: 'sig' },
    ],
  };
  fs.writeFileSync(file, JSON.stringify(set), { mode: 0o600 });
  return set;
}

// The people of the organisation.
const users = {
  ann: { email: 'ann@example.com', email_verified: true, groups: ['ml-team-a'], hd: 'example.com' },
  bob: { email: 'bob@example.com', email_verified: true, groups: ['ml-team-a', 'ml-team-b'], hd: 'example.com' },
  eve: { email: 'eve@example.com', email_verified: true, groups: ['nobody'], hd: 'example.com' },
  cat: { email: 'cat@example.com', email_verified: true, groups: ['ml-team-a', 'ml-team-b'], hd: 'example.com' },
};
const removed = {};

// Machine principals with client credentials: the claims their access
// tokens carry (besides sub = client_id).
const machines = {
  'ci-trainer': { email: 'trainer-ci@proj.iam.gserviceaccount.com', email_verified: true, hd: 'example.com' },
  'ml-ops': { groups: ['ml-team-a', 'ml-team-b'], hd: 'example.com' },
  'team-a-bot': { groups: ['ml-team-a'], hd: 'example.com' },
  'auditor': { email: 'auditor@example.com', email_verified: true, groups: ['finance'], hd: 'example.com' },
  'platform': { groups: ['platform-admins'], hd: 'example.com' },
  'bare': { hd: 'example.com' },
  'nobody': { email: 'nobody@example.com', email_verified: true, groups: ['nobody'], hd: 'example.com' },
  'unverified': { email: 'trainer-ci@proj.iam.gserviceaccount.com', email_verified: false, hd: 'example.com' },
  'stranger-hd': { groups: ['ml-team-a'], hd: 'evil.example' },
};

const hd = arg('hd', 'example.com');
for (const c of [...Object.values(users), ...Object.values(machines)])
  if (c.hd === 'example.com') c.hd = hd;

// Resource indicators: what the access token's audience and algorithm are.
const resources = {
  'https://gpugate.test/rs': { audience: 'gpugate', alg: 'RS256' },
  'https://gpugate.test/es': { audience: 'gpugate', alg: 'ES256' },
  'https://other.test/api': { audience: 'other-api', alg: 'RS256' },
};

// stdout carries the port line only (its reader may close it): everything
// else the provider says goes to stderr
process.stdout.on('error', () => {});
console.log = console.info = console.warn = console.error;

const port = Number(arg('port', '0'));
let jwksFetches = 0;
let handler = null;
const server = http.createServer((req, res) => {
  if (req.url === '/test/jwks-fetches') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ fetches: jwksFetches }));
    return;
  }
  const account = req.url.match(/^\/test\/accounts\/([a-z]+)$/);
  if (account && (req.method === 'PUT' || req.method === 'DELETE')) {
    const id = account[1];
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method === 'DELETE') {
        if (users[id]) removed[id] = users[id];
        delete users[id];
      } else {
        if (!users[id] && removed[id]) users[id] = removed[id];
        if (users[id]) users[id].groups = JSON.parse(body).groups;
      }
      res.statusCode = users[id] || req.method === 'DELETE' ? 204 : 404;
      res.end();
    });
    return;
  }
  if (req.url.startsWith('/jwks')) jwksFetches++;
  handler(req, res);
});
server.listen(port, '127.0.0.1', () => {
  const actual = server.address().port;
  const issuer = `http://127.0.0.1:${actual}`;
  const clients = [
    {
      client_id: 'gpugate-console',
      client_secret: 'console-secret-0123456789abcdef',
      redirect_uris: [arg('redirect', 'https://gpugate.test/auth/callback')],
      // Back-Channel Logout 1.0: ID tokens carry sid; ending the session
      // at /session/end posts a logout_token there
      backchannel_logout_uri: arg('redirect', 'https://gpugate.test/auth/callback')
        .replace(/\/auth\/callback$/, '/auth/backchannel-logout'),
      backchannel_logout_session_required: true,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      scope: 'openid email profile groups',
    },
    ...Object.keys(machines).map((id) => ({
      client_id: id,
      client_secret: `${id}-secret-0123456789abcdef`,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: 'api',
    })),
  ];
  const provider = new Provider(issuer, {
    clients,
    jwks: keys(arg('keys', path.join(root, 'build/oidc-keys.json'))),
    findAccount: async (ctx, id) => users[id] && {
      accountId: id,
      claims: async () => ({ sub: id, ...users[id] }),
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified', 'hd'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups', 'api'],
    features: {
      devInteractions: { enabled: true },
      backchannelLogout: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'https://gpugate.test/rs',
        useGrantedResource: () => true,
        getResourceServerInfo: async (ctx, indicator) => {
          const r = resources[indicator];
          if (!r) throw new Error(`unknown resource ${indicator}`);
          return { scope: 'api', audience: r.audience, accessTokenFormat: 'jwt', jwt: { sign: { alg: r.alg } } };
        },
      },
    },
    // the console's client gets a refresh token at every code exchange (a
    // provider configured to, or asked for offline_access)
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    extraTokenClaims: async (ctx, token) => {
      const m = token.kind === 'ClientCredentials' && machines[token.clientId];
      return m ? { ...m } : undefined;
    },
    // its own outgoing requests (the back-channel logout) go to gpugate on
    // 127.0.0.1, which the provider's SSRF guard refuses: a test provider
    // fetches without it
    fetch: (url, { dispatcher, ...options }) => fetch(url, options),
    // ID tokens carry the scopes' claims (email, groups), as Okta's and
    // Entra's do, rather than only via userinfo
    conformIdTokenClaims: false,
  });
  provider.proxy = false;
  provider.on('backchannel.error', (ctx, err, client, sub, sid) =>
    console.error(`backchannel logout of ${client && client.clientId} failed: ${err && err.message}`));
  provider.on('backchannel.success', (ctx, client) =>
    console.error(`backchannel logout of ${client.clientId} sent`));
  handler = provider.callback();
  process.stdout.write(`port ${actual}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
