#!/usr/bin/env bash
# openapi-json.sh — regenerate openapi/openapi.json from openapi/openapi.yaml.
#
#   deploy/openapi-json.sh          write openapi/openapi.json
#   deploy/openapi-json.sh OUT      write OUT instead (tests/openapi-check.sh
#                                   uses this to compare with the committed
#                                   file)
#
# openapi.json is committed, so building the C server needs no Node.js; run
# this (or `make openapi`) after every change to openapi.yaml. It converts
# with the js-yaml pinned in deploy/tools (YAML 1.2 core schema: no
# timestamps or merge keys, duplicate keys are an error) and writes the JSON
# with two-space indentation and a final newline, so the output depends only
# on the YAML.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/deploy/tools"
in="$root/openapi/openapi.yaml"
out="${1:-$root/openapi/openapi.json}"

if [[ ! -f "$tools/node_modules/js-yaml/package.json" ]]; then
  npm ci --prefix "$tools" --no-audit --no-fund >&2
fi

# Write beside the target and rename, so a failed run never leaves a
# truncated document behind.
tmp="$(mktemp "$(dirname "$out")/.openapi-json.XXXXXX")"
trap 'rm -f "$tmp"' EXIT

node - "$tools/node_modules/js-yaml" "$in" "$tmp" <<'EOF'
'use strict';
const fs = require('node:fs');
const [jsYamlDir, input, output] = process.argv.slice(2);
const yaml = require(jsYamlDir);
const doc = yaml.load(fs.readFileSync(input, 'utf8'), {
  filename: input,
  schema: yaml.CORE_SCHEMA,
});
if (doc === null || typeof doc !== 'object' || typeof doc.openapi !== 'string') {
  console.error(`${input}: not an OpenAPI document`);
  process.exit(1);
}
fs.writeFileSync(output, JSON.stringify(doc, null, 2) + '\n');
EOF

chmod 0644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
