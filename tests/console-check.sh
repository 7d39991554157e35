#!/usr/bin/env bash
# tests/console-check.sh — the web console at / in Debian's Chromium, driven
# headless by playwright-core (pinned in deploy/tools) under `node --test`
# (tests/console/*.test.mjs), against a real gpugate, PostgreSQL and the
# Batch emulator.
#
# It starts a throwaway PostgreSQL (tests/pg.sh), the Cloud Logging
# emulator, the Batch emulator (jobs run 8 s, their output written to
# Cloud Logging) and build/gpugate serve with the reference architecture,
# each on a free port, runs the browser tests, and stops everything on
# exit. CONSOLE_TEST_PATTERN=REGEX runs only the tests whose names match.
# Screenshots of every view go to $work/shots; a failed run keeps
# $work (logs, screenshots) and prints its path. CONSOLE_SHOTS=DIR also
# copies the screenshots there.
#
# Prints node's own summary, then "PASS: console" or "FAIL: console"; exit
# 1 on failure. Needs build/gpugate and build/batch_emulator (make),
# chromium and node (deploy/install-deps.sh).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

work="$(mktemp -d /tmp/gpugate-console.XXXXXX)"
chmod 755 "$work"
pgdir="$work/pg"
server_pid=""
emu_pid=""
log_emu_pid=""
failed=0

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  for pid in "$server_pid" "$emu_pid" "$log_emu_pid"; do
    if [[ -n "$pid" ]]; then
      kill "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
    fi
  done
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1
  if ((failed)); then echo "logs and screenshots kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

indent() { sed 's/^/    /'; }
abort() {
  echo "    $1"
  echo "FAIL: console"
  failed=1
  exit 1
}

command -v chromium >/dev/null 2>&1 || abort "chromium is not installed (deploy/install-deps.sh installs it)"
command -v node >/dev/null 2>&1 || abort "node is not installed"
[[ -x build/gpugate && -x build/batch_emulator && -x build/logging_emulator ]] ||
  abort "build/gpugate, build/batch_emulator or build/logging_emulator is missing (run make)"
[[ -f deploy/tools/node_modules/playwright-core/package.json &&
  -f deploy/tools/node_modules/oidc-provider/package.json ]] ||
  npm ci --prefix deploy/tools --no-audit --no-fund >/dev/null 2>&1 ||
  abort "npm ci in deploy/tools failed"

wait_port() { # file pid what
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "$1" ]] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  abort "$3 did not start"
}

if ! uri="$(tests/pg.sh start "$pgdir" 2>"$work/pg-start.log")"; then
  indent <"$work/pg-start.log"
  abort "PostgreSQL did not start"
fi
tests/pg.sh createdb "$pgdir" gpugate_console >/dev/null 2>&1 || abort "createdb failed"
db="${uri%/*}/gpugate_console"
secret="$root/tests/fixtures/keys/hs256.secret"

LOG_EMU_LISTEN=127.0.0.1:0 LOG_EMU_PORT_FILE="$work/logging.port" \
  build/logging_emulator >"$work/logging_emulator.log" 2>&1 &
log_emu_pid=$!
wait_port "$work/logging.port" "$log_emu_pid" "the Cloud Logging emulator"
logging="127.0.0.1:$(<"$work/logging.port")"

EMU_LISTEN=127.0.0.1:0 EMU_PORT_FILE="$work/emu.port" EMU_PROJECT=console-project \
  EMU_LOGGING_URL="http://$logging" \
  EMU_RUN_MS=8000 EMU_START_MS=500 \
  EMU_CAPACITY="us-central1/RESERVATION_BOUND=16,us-central1/STANDARD=32,us-central1/SPOT=64,us-central1/FLEX_START=20" \
  build/batch_emulator >"$work/emulator.log" 2>&1 &
emu_pid=$!
wait_port "$work/emu.port" "$emu_pid" "the Batch emulator"
emu="127.0.0.1:$(<"$work/emu.port")"

export GPUGATE_DATABASE_URL="$db" GPUGATE_JWT_HS256_SECRET_FILE="$secret"
build/gpugate migrate >"$work/migrate.log" 2>&1 || abort "gpugate migrate failed"
build/gpugate apply deploy/examples/reference-architecture.json >"$work/apply.log" 2>&1 ||
  abort "gpugate apply failed"

GPUGATE_LISTEN=127.0.0.1:0 GPUGATE_PORT_FILE="$work/port" \
  GPUGATE_BATCH_BACKEND=gcp GPUGATE_GCP_PROJECT=console-project \
  GPUGATE_BATCH_ENDPOINT="http://$emu" GCE_METADATA_HOST="$emu" \
  GPUGATE_SYNC_INTERVAL_MS=500 GPUGATE_ADMISSION_INTERVAL_MS=500 \
  GPUGATE_RATE_LIMIT_RPS=0 \
  GPUGATE_LOGGING_ENDPOINT="http://$logging" GPUGATE_LOGGING_POLL_MS=500 \
  build/gpugate serve >"$work/server.log" 2>&1 &
server_pid=$!
wait_port "$work/port" "$server_pid" "gpugate"

mkdir -p "$work/shots"
CONSOLE_BASE="http://127.0.0.1:$(<"$work/port")" CONSOLE_SHOTS="$work/shots" CONSOLE_DB="$db" \
  CONSOLE_ROOT="$root" GPUGATE_JWT_HS256_SECRET_FILE="$secret" \
  timeout -k 10 600 node --test --test-concurrency=1 --test-reporter=spec \
  ${CONSOLE_TEST_PATTERN:+--test-name-pattern="$CONSOLE_TEST_PATTERN"} \
  tests/console/*.test.mjs >"$work/node.log" 2>&1
rc=$?
# node's summary lines ("ℹ tests 12", "ℹ pass 12", ...), not counted by run.sh
sed -E 's/^/    /' "$work/node.log" | grep -vE '^\s+$' | tail -n 60
if [[ -n "${CONSOLE_SHOTS:-}" ]]; then
  mkdir -p "$CONSOLE_SHOTS" && cp "$work"/shots/*.png "$CONSOLE_SHOTS"/ 2>/dev/null
fi
if ((rc == 0)); then
  echo "PASS: console"
else
  failed=1
  echo "FAIL: console"
  exit 1
fi
