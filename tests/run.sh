#!/usr/bin/env bash
# tests/run.sh — the whole suite, as `make test` runs it.
#
# Installs what is missing, builds with -Werror, runs the unit tests, the
# same unit tests under ASan+UBSan, the integration tests against a
# throwaway PostgreSQL cluster, each libFuzzer harness for 10 s, the
# OpenAPI checks, the web console in headless Chromium, format and lint.
# Each step's result is counted; the last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()
workdir=$(mktemp -d /tmp/gpugate-test.XXXXXX)
chmod 755 "$workdir"
pgdir="$workdir/pg"

cleanup() {
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  if [ "$failed" -eq 0 ]; then rm -rf "$workdir"; else echo "logs kept in $workdir"; fi
}
trap cleanup EXIT

# a step's own "N passed, N failed" line must not look like the suite's
quiet_summaries() { sed -E 's/^([0-9]+ passed, [0-9]+ failed)/(step) \1/'; }

# count a single pass/fail step
step() {
  local name=$1; shift
  echo "=== $name"
  if "$@" >"$workdir/$name.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS: $name"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAIL: $name"
    tail -n 40 "$workdir/$name.log" | quiet_summaries
  fi
}

# run a Check binary and add its own counts (one line "NN%: Checks: N, Failures: F, Errors: E")
check_suite() {
  local name=$1; shift
  echo "=== $name"
  "$@" >"$workdir/$name.log" 2>&1
  local rc=$?
  local line
  line=$(grep -E '^[0-9]+%: Checks: ' "$workdir/$name.log" | tail -n 1)
  if [ -z "$line" ]; then
    failed=$((failed + 1)); failures+=("$name (no result, exit $rc)")
    echo "FAIL: $name did not report"; tail -n 40 "$workdir/$name.log" | quiet_summaries; return
  fi
  local checks fails errs
  checks=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
  fails=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
  errs=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + checks - fails - errs))
  failed=$((failed + fails + errs))
  echo "$name: $line"
  if [ $((fails + errs)) -gt 0 ] || [ "$rc" -ne 0 ]; then
    failures+=("$name")
    grep -E ':[EF]:' "$workdir/$name.log" | head -n 40
    [ "$rc" -ne 0 ] && [ $((fails + errs)) -eq 0 ] && { failed=$((failed + 1)); echo "FAIL: $name exited $rc"; tail -n 20 "$workdir/$name.log" | quiet_summaries; }
  fi
}

summary() {
  echo
  if [ "${#failures[@]}" -gt 0 ]; then printf 'failed: %s\n' "${failures[@]}"; fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

step deps deploy/install-deps.sh
step build make -j2 all build/unit_tests build/integration_tests build/batch_emulator build/bigquery_emulator
if [ ! -x build/gpugate ]; then summary; fi

check_suite unit build/unit_tests
step asan-build make -j2 build/asan/unit_tests
if [ -x build/asan/unit_tests ]; then
  check_suite unit-asan env CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build/asan/unit_tests
fi

if uri=$(tests/pg.sh start "$pgdir" 2>"$workdir/pg-start.log"); then
  passed=$((passed + 1))
  check_suite integration env GPUGATE_TEST_PG_URI="$uri" CK_DEFAULT_TIMEOUT=120 build/integration_tests
else
  failed=$((failed + 1)); failures+=("postgresql start"); cat "$workdir/pg-start.log"
fi

# libFuzzer harnesses (tests/fuzz), each for a short fixed budget
step fuzz-build make -j2 fuzz-build
for harness in tests/fuzz/fuzz_*.c; do
  harness=${harness#tests/fuzz/fuzz_}
  harness=${harness%.c}
  step "fuzz-$harness" tests/fuzz/run.sh 10 "$harness"
done

step openapi tests/openapi-check.sh
step docs tests/docs-check.sh
step console env CONSOLE_SHOTS="$workdir/console-shots" tests/console-check.sh
step deploy tests/deploy-check.sh
step format-check make -s format-check
step lint make -s lint

summary
