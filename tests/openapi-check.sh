#!/usr/bin/env bash
# openapi-check.sh — the OpenAPI document is valid, its JSON copy is current
# and it describes exactly the routes gpugate serves.
#
#   1. redocly-lint   Redocly lint (redocly.yaml: the recommended ruleset) of
#                     openapi/openapi.yaml reports no errors.
#   2. json-current   openapi/openapi.json is byte for byte what
#                     deploy/openapi-json.sh makes of openapi/openapi.yaml.
#   3. routes-match   The (METHOD, path, operationId) triples of
#                     server/routes.def equal those of the document.
#
# Each check prints one line, "PASS: <name>" or "FAIL: <name>", after its
# details; the script exits 1 if any failed. It needs no network once
# deploy/tools/node_modules exists (`npm ci --prefix deploy/tools`); without
# it, it runs that first.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools="$root/deploy/tools"
redocly="$tools/node_modules/.bin/redocly"

# Redocly: no telemetry, no update check (both would reach the network).
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

if [[ ! -x "$redocly" || ! -f "$tools/node_modules/js-yaml/package.json" ]]; then
  npm ci --prefix "$tools" --no-audit --no-fund
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
indent() { sed 's/^/    /'; }

# --- 1. lint ---------------------------------------------------------------
# Redocly exits non-zero when there are errors; warnings are shown but pass.
# Its Node.js deprecation banner (box-drawing lines) is noise here.
if "$redocly" lint openapi/openapi.yaml --config redocly.yaml \
     --format=stylish --max-problems 1000 >"$work/lint.out" 2>&1; then
  lint_ok=1
else
  lint_ok=0
fi
grep -Ev '^ *[║╔╚]|^\s*$' "$work/lint.out" | indent || true
if [[ $lint_ok == 1 ]]; then pass redocly-lint; else fail redocly-lint; fi

# --- 2. openapi.json is current -------------------------------------------
if ! deploy/openapi-json.sh "$work/openapi.json" 2>&1 | indent; then
  echo "    deploy/openapi-json.sh failed"
  fail json-current
elif [[ ! -f openapi/openapi.json ]]; then
  echo "    openapi/openapi.json is missing; run deploy/openapi-json.sh"
  fail json-current
elif diff -u openapi/openapi.json "$work/openapi.json" >"$work/json.diff"; then
  pass json-current
else
  head -n 40 "$work/json.diff" | cut -c1-160 | indent
  echo "    openapi/openapi.json is stale; run deploy/openapi-json.sh"
  fail json-current
fi

# --- 3. routes.def == document --------------------------------------------
# ROUTE(GET,    "/v1/flavors/{name}",  flavors_get,  ROLE_ANY,  BODY_NONE)
awk '/^[[:space:]]*ROUTE\(/ {
       line = $0
       sub(/^[[:space:]]*ROUTE\(/, "", line)
       n = split(line, f, ",")
       for (i = 1; i <= 3; i++) {
         gsub(/^[[:space:]]+|[[:space:]]+$/, "", f[i])
         gsub(/"/, "", f[i])
       }
       if (n < 5 || f[1] == "" || f[2] == "" || f[3] == "") {
         print "malformed ROUTE line: " $0 > "/dev/stderr"
         exit 1
       }
       print f[1], f[2], f[3]
     }' server/routes.def | LC_ALL=C sort >"$work/routes.txt"

node - "$tools/node_modules/js-yaml" openapi/openapi.yaml \
  >"$work/doc.unsorted" <<'EOF'
'use strict';
const fs = require('node:fs');
const [jsYamlDir, input] = process.argv.slice(2);
const yaml = require(jsYamlDir);
const doc = yaml.load(fs.readFileSync(input, 'utf8'), { schema: yaml.CORE_SCHEMA });
const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
for (const [path, item] of Object.entries(doc.paths || {})) {
  for (const m of methods) {
    if (item && item[m]) {
      console.log(`${m.toUpperCase()} ${path} ${item[m].operationId || '(no-operationId)'}`);
    }
  }
}
EOF
LC_ALL=C sort "$work/doc.unsorted" >"$work/doc.txt"

if [[ ! -s "$work/routes.txt" ]]; then
  echo "    no ROUTE(...) lines found in server/routes.def"
  fail routes-match
elif cmp -s "$work/routes.txt" "$work/doc.txt"; then
  echo "    $(wc -l <"$work/routes.txt") routes"
  pass routes-match
else
  LC_ALL=C comm -23 "$work/routes.txt" "$work/doc.txt" |
    sed 's/^/    only in server\/routes.def: /'
  LC_ALL=C comm -13 "$work/routes.txt" "$work/doc.txt" |
    sed 's/^/    only in openapi\/openapi.yaml: /'
  fail routes-match
fi

exit "$failed"
