#!/usr/bin/env bash
# deploy/install-deps.sh — install what gpugate needs to build, test and run
# on Debian 12. Idempotent: when everything is present it prints one line and
# changes nothing.
#
#   1. Debian packages (apt-get, only the missing ones; sudo when not root).
#      nodejs/npm are skipped when `node`/`npm` are already on PATH (for
#      example a NodeSource build under /usr/bin).
#   2. Node tools in deploy/tools (npm ci) when package.json exists and
#      node_modules is missing or older than package-lock.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/deploy/tools"

PACKAGES=(
  build-essential pkg-config
  libmicrohttpd-dev libjansson-dev libpq-dev libjwt-dev libcurl4-openssl-dev
  libjose-dev # JWK and JWS of published key sets (identity/jwks.c, identity/oidc.c)
  libssl-dev zlib1g-dev
  check libsubunit-dev
  postgresql postgresql-contrib
  clang-format clang-tidy cppcheck
  nodejs npm
  curl ca-certificates
  prometheus jq # promtool and jq for tests/metrics-check.sh (GET /metrics)
  chromium # headless browser for tests/docs-check.sh (GET /docs) and tests/console-check.sh (GET /)
  clang libclang-rt-14-dev # libFuzzer + sanitizers for tests/fuzz (make fuzz)
)

# True when dpkg reports PKG (any architecture) as installed.
pkg_installed() {
  local status
  status="$(dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null)" ||
    return 1
  grep -qx installed <<<"$status"
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  case "$pkg" in
  nodejs) command -v node >/dev/null 2>&1 && continue ;;
  npm) command -v npm >/dev/null 2>&1 && continue ;;
  esac
  pkg_installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all Debian packages present"
else
  SUDO=()
  if [[ "$(id -u)" -ne 0 ]]; then
    SUDO=(sudo)
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Node tools (OpenAPI tooling and the like), pinned by package-lock.json.
if [[ -f "$TOOLS/package.json" ]]; then
  lock="$TOOLS/package-lock.json"
  stamp="$TOOLS/node_modules/.package-lock.json"
  if [[ ! -f "$lock" ]]; then
    echo "install-deps: $lock is missing; create it with" \
      "'npm install --prefix deploy/tools' and commit it" >&2
    exit 1
  fi
  if [[ ! -f "$stamp" || "$stamp" -ot "$lock" ]]; then
    echo "install-deps: npm ci in deploy/tools"
    npm ci --prefix "$TOOLS" --no-audit --no-fund
  fi
fi
