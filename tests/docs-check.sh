#!/usr/bin/env bash
# tests/docs-check.sh — GET /docs renders the OpenAPI document in headless
# Chromium, from gpugate alone (no CDN, no request leaves the machine).
#
#   1. page-refs     the page served at /docs references same-origin URLs
#                    only (the fingerprinted Redoc bundle, /openapi.json) and
#                    is sent with a Content-Security-Policy that allows no
#                    other origin; the bundle is served with a year-long cache
#   2. rendered      Chromium (--dump-dom after Redoc has run) shows every
#                    operation of openapi/openapi.json: its anchor
#                    "operation/<operationId>" and its summary
#   3. same-origin   Chromium's net log: every request the page made went to
#                    this gpugate, every TCP connection to 127.0.0.1, no QUIC
#
# It starts a throwaway PostgreSQL (tests/pg.sh) and build/gpugate serve on a
# free port, and stops both on exit. Chromium's resolver maps every host but
# 127.0.0.1 to nothing, so nothing can leave even if the page tried.
# DOCS_SCREENSHOT=FILE.png also saves a screenshot of the page.
#
# Each check prints "PASS: <name>" or "FAIL: <name>"; exit 1 if any failed.
# Needs build/gpugate (make), chromium and node (deploy/install-deps.sh).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

# tests/pg.sh needs a directory the postgres user can enter when run as root.
work="$(mktemp -d /tmp/gpugate-docs.XXXXXX)"
chmod 755 "$work"
pgdir="$work/pg"
server_pid=""
failed=0

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1
  if ((failed)); then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
indent() { sed 's/^/    /'; }
# Stop here: the remaining checks cannot run.
abort() {
  echo "    $2"
  fail "$1"
  exit 1
}

command -v chromium >/dev/null 2>&1 ||
  abort setup "chromium is not installed (deploy/install-deps.sh installs it)"
command -v node >/dev/null 2>&1 || abort setup "node is not installed"
[[ -x build/gpugate ]] || abort setup "build/gpugate is missing (run make)"

# --- gpugate on a free port, on a throwaway database ----------------------
if ! uri="$(tests/pg.sh start "$pgdir" 2>"$work/pg-start.log")"; then
  indent <"$work/pg-start.log"
  abort setup "PostgreSQL did not start"
fi
tests/pg.sh createdb "$pgdir" gpugate_docs >/dev/null 2>&1 ||
  abort setup "createdb gpugate_docs failed"

GPUGATE_LISTEN=127.0.0.1:0 GPUGATE_PORT_FILE="$work/port" \
  GPUGATE_DATABASE_URL="${uri%/*}/gpugate_docs" \
  GPUGATE_JWT_HS256_SECRET_FILE=tests/fixtures/keys/hs256.secret \
  build/gpugate serve >"$work/server.log" 2>&1 &
server_pid=$!

port=""
for ((i = 0; i < 100; i++)); do
  if [[ -s "$work/port" ]]; then
    port="$(<"$work/port")"
    curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]] || ! curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz"; then
  tail -n 20 "$work/server.log" | indent
  abort setup "gpugate did not start"
fi
base="http://127.0.0.1:$port"
echo "    gpugate on $base"

# --- 1. the page and its references ---------------------------------------
page_ok=1
curl -fsS -D "$work/page.hdr" -o "$work/page.html" "$base/docs" || page_ok=0
# src=, href= and url(...) references in the page, one a line
refs="$(grep -oE '(src|href)="[^"]*"|url\([^)]*\)' "$work/page.html" 2>/dev/null |
  sed -E 's/^(src|href)="//; s/"$//; s/^url\(//; s/\)$//')"
while IFS= read -r ref; do
  [[ -z "$ref" ]] && continue
  # same-origin paths ("/x", not "//host/x"), data: URIs and fragments only
  if [[ "$ref" =~ ^/[^/] || "$ref" == data:* || "$ref" == \#* ]]; then
    echo "    ref $ref"
  else
    echo "    ref $ref is not same-origin"
    page_ok=0
  fi
done <<<"$refs"
js_path="$(grep -oE 'src="/docs/redoc\.standalone\.js\?v=[0-9a-f]{16}"' "$work/page.html" |
  sed -E 's/^src="//; s/"$//')"
if [[ -z "$js_path" ]]; then
  echo "    the page does not load /docs/redoc.standalone.js?v=<fingerprint>"
  page_ok=0
fi
grep -q 'spec-url="/openapi.json"' "$work/page.html" ||
  { echo "    the page does not render /openapi.json"; page_ok=0; }
csp="$(grep -i '^Content-Security-Policy:' "$work/page.hdr" | tr -d '\r')"
if [[ "$csp" != *"default-src 'none'"* || "$csp" =~ https?: || "$csp" == *"*"* ]]; then
  echo "    page CSP allows other origins or is missing: ${csp:-(none)}"
  page_ok=0
fi
grep -qi '^Content-Type: text/html' "$work/page.hdr" ||
  { echo "    /docs is not text/html"; page_ok=0; }
if [[ -n "$js_path" ]]; then
  curl -fsS -D "$work/js.hdr" -o "$work/redoc.js" "$base$js_path" || page_ok=0
  grep -qi '^Content-Type: application/javascript' "$work/js.hdr" ||
    { echo "    the bundle is not application/javascript"; page_ok=0; }
  grep -qi '^Cache-Control: .*max-age=31536000' "$work/js.hdr" ||
    { echo "    the bundle has no long Cache-Control"; page_ok=0; }
  cmp -s "$work/redoc.js" deploy/tools/node_modules/redoc/bundles/redoc.standalone.js ||
    { echo "    the bundle served differs from deploy/tools/node_modules/redoc"; page_ok=0; }
fi
if ((page_ok)); then pass page-refs; else fail page-refs; fi

# --- 2. rendered in headless Chromium --------------------------------------
# The probe's flags (no background networking, sync, updates, first run)
# plus a resolver that knows 127.0.0.1 only. --virtual-time-budget lets
# Redoc fetch /openapi.json and render before the DOM is dumped.
chrome_flags=(
  --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-default-apps --disable-extensions --disable-domain-reliability
  --disable-client-side-phishing-detection --no-pings
  "--disable-features=AutofillServerCommunication,NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate"
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
  --virtual-time-budget=15000 "--window-size=1280,900" --hide-scrollbars
)
timeout -k 5 45 chromium "${chrome_flags[@]}" --user-data-dir="$work/chrome" \
  --log-net-log="$work/netlog.json" --enable-logging=stderr --v=0 \
  --dump-dom "$base/docs" >"$work/dom.html" 2>"$work/chrome.log"
chrome_rc=$?
if ((chrome_rc != 0)) || [[ ! -s "$work/dom.html" ]]; then
  grep -v dbus "$work/chrome.log" | tail -n 20 | indent
  abort rendered "chromium --dump-dom failed (exit $chrome_rc)"
fi
# Blocked by the page's CSP (Redoc's sidebar logo from its CDN, say): never
# sent, so not a failure; listed for the record.
grep -oE "Loading the [a-z]+ '[^']*' violates[^:]*" "$work/chrome.log" |
  sort -u | sed 's/^/blocked by CSP: /' | indent

if node - openapi/openapi.json "$work/dom.html" <<'EOF'; then
'use strict';
const fs = require('node:fs');
const [docFile, domFile] = process.argv.slice(2);
const doc = JSON.parse(fs.readFileSync(docFile, 'utf8'));
const dom = fs.readFileSync(domFile, 'utf8');
const text = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
let n = 0, missing = 0;
for (const [path, item] of Object.entries(doc.paths || {})) {
  for (const m of methods) {
    const op = item && item[m];
    if (!op) continue;
    n++;
    const what = [];
    if (!op.operationId || !dom.includes(`operation/${op.operationId}"`)) what.push('operationId');
    // Redoc shows the summary as an element's whole text (menu and heading)
    if (!op.summary || !dom.includes(`>${text(op.summary.trim())}<`)) what.push('summary');
    if (what.length) {
      missing++;
      console.log(`    not rendered: ${m.toUpperCase()} ${path} ${op.operationId} ` +
        `"${op.summary}" (${what.join(', ')})`);
    }
  }
}
console.log(`    ${n - missing} of ${n} operations rendered`);
process.exit(n > 0 && missing === 0 ? 0 : 1);
EOF
  pass rendered
else
  if ! curl -fsS "$base/openapi.json" | cmp -s - openapi/openapi.json; then
    echo "    build/gpugate serves an older openapi.json than openapi/openapi.json: run make"
  fi
  fail rendered
fi

# --- 3. nothing left the machine -------------------------------------------
if node - "$work/netlog.json" "$base" <<'EOF'; then
'use strict';
const fs = require('node:fs');
const [file, base] = process.argv.slice(2);
const log = JSON.parse(fs.readFileSync(file, 'utf8'));
const invert = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [v, k]));
const type = invert(log.constants.logEventTypes);
const sourceType = invert(log.constants.logSourceType);
const loopback = (a) => /^(127\.\d+\.\d+\.\d+|\[::1\]):\d+$/.test(a);
let bad = 0;
const page = [], browser = new Set(), udpPeer = new Map();
for (const e of log.events) {
  const p = e.params || {};
  const t = type[e.type];
  const src = sourceType[e.source.type];
  if (t === 'URL_REQUEST_START_JOB' && p.url) {
    // The page's own loads: the navigation and whatever it initiated.
    // Chromium's own (updates, accounts) have no initiator and type "other";
    // the resolver rules leave them nowhere to go.
    if (p.request_type !== 'other' || p.initiator !== 'not an origin') page.push(p.url);
    else browser.add(new URL(p.url).host);
  }
  if ((t === 'TCP_CONNECT_ATTEMPT' || t === 'TCP_CONNECT') &&
      (p.address || p.remote_address) && !loopback(p.address || p.remote_address)) {
    console.log(`    TCP connection to ${p.address || p.remote_address}`);
    bad++;
  }
  if (src === 'QUIC_SESSION') {
    console.log(`    QUIC session: ${t} ${JSON.stringify(p).slice(0, 200)}`);
    bad++;
  }
  // A connected UDP socket sends nothing by itself (Chromium connects one to
  // learn its local address); a datagram sent off the machine is a failure.
  if (t === 'UDP_CONNECT' && p.address) udpPeer.set(e.source.id, p.address);
  if (t === 'UDP_BYTES_SENT') {
    const peer = p.address || udpPeer.get(e.source.id) || '(unknown)';
    if (!loopback(peer)) {
      console.log(`    UDP datagram to ${peer}`);
      bad++;
    }
  }
}
for (const u of [...new Set(page)]) {
  const ok = u === base || u.startsWith(base + '/');
  console.log(`    page request ${u}${ok ? '' : ' is not same-origin'}`);
  if (!ok) bad++;
}
for (const want of ['/docs', '/openapi.json']) {
  if (!page.includes(base + want)) {
    console.log(`    the page did not request ${want}`);
    bad++;
  }
}
if (browser.size) console.log(`    Chromium's own requests, unresolved: ${[...browser].join(', ')}`);
process.exit(bad ? 1 : 0);
EOF
  pass same-origin
else
  fail same-origin
fi

if [[ -n "${DOCS_SCREENSHOT:-}" ]]; then
  timeout -k 5 45 chromium "${chrome_flags[@]}" --user-data-dir="$work/chrome-shot" \
    --screenshot="$DOCS_SCREENSHOT" "$base/docs" >/dev/null 2>&1 &&
    echo "    screenshot: $DOCS_SCREENSHOT"
fi

exit "$failed"
