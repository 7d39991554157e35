#!/usr/bin/env bash
# tests/run.sh — the whole suite, as `make test` runs it.
#
# Installs what is missing, builds with -Werror, runs the unit tests, the
# same unit tests under ASan+UBSan, the integration tests against a
# throwaway PostgreSQL cluster (in three lanes at once: soak; fairshare and
# a few shorter suites; the rest), each libFuzzer harness for 10 s (two at
# a time), the OpenAPI checks, the web console in headless Chromium, format
# and lint.
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
  local t0=$SECONDS
  echo "=== $name"
  "$@" >"$workdir/$name.log" 2>&1
  step_result "$name" $? "$((SECONDS - t0))"
}

# count a step whose output is in $workdir/$name.log and whose exit was rc
step_result() {
  local name=$1 rc=$2 took=$3
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); echo "PASS: $name ($took s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAIL: $name ($took s)"
    tail -n 40 "$workdir/$name.log" | quiet_summaries
  fi
}

# run a Check binary and add its own counts (one line "NN%: Checks: N, Failures: F, Errors: E")
check_suite() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name"
  "$@" >"$workdir/$name.log" 2>&1
  check_count "$name" $? "$((SECONDS - t0))"
}

# add the counts of a Check run whose output is in $workdir/$name.log
check_count() {
  local name=$1 rc=$2 took=$3
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
  echo "$name: $line ($took s)"
  if [ $((fails + errs)) -gt 0 ] || [ "$rc" -ne 0 ]; then
    failures+=("$name")
    grep -E ':[EF]:' "$workdir/$name.log" | head -n 40
    [ "$rc" -ne 0 ] && [ $((fails + errs)) -eq 0 ] && { failed=$((failed + 1)); echo "FAIL: $name exited $rc"; tail -n 20 "$workdir/$name.log" | quiet_summaries; }
  fi
}

summary() {
  echo
  echo "whole suite: $SECONDS s"
  if [ "${#failures[@]}" -gt 0 ]; then printf 'failed: %s\n' "${failures[@]}"; fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

step deps deploy/install-deps.sh
step build make -j2 all build/unit_tests build/integration_tests build/batch_emulator build/bigquery_emulator build/logging_emulator
if [ ! -x build/gpugate ]; then summary; fi

# Check's default 4 s per test is a timed assertion on a loaded host (the
# random walks of sched_state take about 1 s alone, and ran out at load 8)
check_suite unit env CK_DEFAULT_TIMEOUT=300 build/unit_tests
step asan-build make -j2 build/asan/unit_tests
if [ -x build/asan/unit_tests ]; then
  check_suite unit-asan env CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build/asan/unit_tests
fi

if uri=$(tests/pg.sh start "$pgdir" 2>"$workdir/pg-start.log"); then
  passed=$((passed + 1))
  # The integration suites run in three lanes at once against the one
  # cluster: soak (five minutes of load at about a third of a core) in a
  # lane of its own, fairshare (mostly waiting on job run times) with a few
  # shorter suites in another, every other suite in the third. Each suite
  # makes its own databases, servers and emulators on free ports, so the
  # lanes share nothing else. A lane is named after its first suite.
  lanes=(soak fairshare,cancel,bigquery,months)
  skip=$(IFS=,; echo "${lanes[*]}")
  names=(integration)
  for lane in "${lanes[@]}"; do names+=("integration-${lane%%,*}"); done
  for lane in "${names[@]}"; do
    echo "=== $lane (started)"
  done
  # servers', emulators' and providers' logs live in the work dir: gone
  # when the run passes, kept with the other logs when it fails
  export GPUGATE_TEST_TMPDIR="$workdir/it"
  mkdir -p "$GPUGATE_TEST_TMPDIR"
  t0=$SECONDS
  pids=()
  (GPUGATE_TEST_PG_URI="$uri" CK_DEFAULT_TIMEOUT=120 GPUGATE_TEST_SKIP="$skip" \
     build/integration_tests >"$workdir/integration.log" 2>&1; echo "$? $((SECONDS - t0))" >"$workdir/integration.rc") &
  pids+=($!)
  for lane in "${lanes[@]}"; do
    (GPUGATE_TEST_PG_URI="$uri" CK_DEFAULT_TIMEOUT=120 GPUGATE_TEST_SUITE="$lane" \
       build/integration_tests >"$workdir/integration-${lane%%,*}.log" 2>&1; echo "$? $((SECONDS - t0))" >"$workdir/integration-${lane%%,*}.rc") &
    pids+=($!)
  done
  wait "${pids[@]}"
  for lane in "${names[@]}"; do
    read -r rc took <"$workdir/$lane.rc" || { rc=1; took=$((SECONDS - t0)); }
    check_count "$lane" "$rc" "$took"
  done
else
  failed=$((failed + 1)); failures+=("postgresql start"); cat "$workdir/pg-start.log"
fi

# libFuzzer harnesses (tests/fuzz), each for a short fixed budget
step fuzz-build make -j2 fuzz-build
# two harnesses at a time (each is one process on one core)
harnesses=()
for harness in tests/fuzz/fuzz_*.c; do
  harness=${harness#tests/fuzz/fuzz_}
  harnesses+=("${harness%.c}")
done
t0=$SECONDS
printf '%s\n' "${harnesses[@]}" | xargs -P 2 -I '{}' sh -c \
  't0=$(date +%s); tests/fuzz/run.sh 10 "$2" >"$1/fuzz-$2.log" 2>&1; echo "$? $(($(date +%s) - t0))" >"$1/fuzz-$2.rc"' \
  sh "$workdir" '{}'
for harness in "${harnesses[@]}"; do
  read -r rc took <"$workdir/fuzz-$harness.rc" || { rc=1; took=$((SECONDS - t0)); }
  step_result "fuzz-$harness" "$rc" "$took"
done

step openapi tests/openapi-check.sh
step docs tests/docs-check.sh
step console env CONSOLE_SHOTS="$workdir/console-shots" tests/console-check.sh
step deploy tests/deploy-check.sh
step format-check make -s format-check
step lint make -s lint

summary
