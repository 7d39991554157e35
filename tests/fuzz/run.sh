#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS NAME... — run each libFuzzer harness
# build/fuzz/fuzz_NAME for SECONDS, one after the other (make fuzz builds
# them first). Each starts from its committed seeds (tests/fuzz/corpus/NAME)
# plus what earlier runs added (build/fuzz/corpus/NAME), with the
# dictionary tests/fuzz/NAME.dict when there is one; a crash, leak,
# sanitizer report or timeout is written to build/fuzz/findings/ and makes
# the run fail. Prints one line per harness: executions, executions per
# second, corpus size; exits non-zero when any harness found something.
set -uo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:?usage: tests/fuzz/run.sh SECONDS NAME...}
shift
status=0
mkdir -p build/fuzz/findings build/fuzz/logs
for name in "$@"; do
  bin=build/fuzz/fuzz_$name
  work=build/fuzz/corpus/$name
  log=build/fuzz/logs/$name.log
  if [ ! -x "$bin" ]; then
    echo "fuzz $name: $bin is missing (make fuzz-build)" >&2
    status=1
    continue
  fi
  mkdir -p "$work"
  dict=()
  if [ -f "tests/fuzz/$name.dict" ]; then dict=(-dict="tests/fuzz/$name.dict"); fi
  # -timeout: one input taking longer is a finding; -rss_limit_mb keeps
  # two parallel runs within a shared machine's memory
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
    -max_len=65536 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="build/fuzz/findings/$name-" "$work" \
    "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  speed=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  echo "fuzz $name: $result, ${runs:-?} executions in ${seconds} s" \
    "(${speed:-?}/s), corpus $(find "$work" -type f | wc -l) files"
  if [ "$result" != ok ]; then
    grep -E 'ERROR|SUMMARY|disagree|rejects|accepts|Test unit written' "$log" | head -n 20
  fi
done
exit "$status"
