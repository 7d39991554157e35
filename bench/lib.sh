# shellcheck shell=bash disable=SC2034  # variables are for the sourcing script
# bench/lib.sh — shared by bench/http.sh and bench/kueue.sh (sourced, not
# run): a throwaway PostgreSQL, gpugate and the Batch emulator on free
# ports, all stopped by the EXIT trap, and the table the scripts print.
#
# After bench_setup: $T (temp dir, mode 755 so that the postgres user can
# enter it), $PGURI (the gpugate database), $PSQL (psql command array).

bench_log() { echo "$BENCH_NAME: $*" >&2; }
bench_die() {
  bench_log "$*"
  exit 1
}

# Processes started here, stopped in reverse order at exit.
BENCH_PIDS=()

bench_cleanup() {
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${BENCH_PIDS[i]}" 2>/dev/null || true
  done
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do
    wait "${BENCH_PIDS[i]}" 2>/dev/null || true
  done
  if [[ -n "${T:-}" && -d "$T" ]]; then
    bench_pg_statements
    tests/pg.sh stop "$T/pg" >/dev/null 2>&1 || true
    if [[ -n "${BENCH_KEEP:-}" ]]; then
      bench_log "kept $T (BENCH_KEEP)"
    else
      rm -rf "$T"
    fi
  fi
}

# Install a Debian package when its command is missing (wrk, pgbench, jq).
bench_need() {
  local cmd="$1" pkg="$2" sudo=()
  command -v "$cmd" >/dev/null 2>&1 && return 0
  [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
  bench_log "installing $pkg (for $cmd)"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y \
    --no-install-recommends "$pkg" >&2 ||
    bench_die "$cmd is missing and apt-get could not install $pkg"
}

# bench_setup [BINARY...]: build/gpugate and the named build/ binaries are
# copied to $T/bin ($BIN) and run from there, so that a rebuild while the
# bench runs (make in another shell) cannot swap them mid-run.
bench_setup() {
  local uri b
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
  for b in build/gpugate "$@"; do
    [[ -x "$b" ]] || bench_die "$b is missing; run make bench"
  done
  bench_need jq jq
  bench_need pgbench postgresql-contrib
  b="${BENCH_NAME##*/}"
  T="$(mktemp -d "/tmp/gpugate-bench-${b%.sh}.XXXXXX")"
  chmod 755 "$T"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
  set -E
  trap 'bench_log "failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR
  BIN="$T/bin"
  mkdir -p "$BIN"
  for b in build/gpugate "$@"; do
    cp -- "$b" "$BIN/"
  done
  bench_pg_start
  export GPUGATE_JWT_HS256_SECRET_FILE="$PWD/tests/fixtures/keys/hs256.secret"
  export GPUGATE_LOG_LEVEL=warn GPUGATE_RATE_LIMIT_RPS=0
  "$BIN/gpugate" migrate >/dev/null
}

# A new PostgreSQL cluster in $T/pg and its database gpugate: sets PGURI,
# PSQL and GPUGATE_DATABASE_URL (BENCH_PG_STATEMENTS: with
# pg_stat_statements).
bench_pg_start() {
  local uri
  uri="$(tests/pg.sh start "$T/pg" 2>/dev/null)" ||
    bench_die "could not start PostgreSQL (tests/pg.sh start $T/pg)"
  if [[ -n "${BENCH_PG_STATEMENTS:-}" ]]; then # diagnosis: statement costs
    echo "shared_preload_libraries = 'pg_stat_statements'" >>"$T/pg/data/postgresql.conf"
    tests/pg.sh stop "$T/pg" >/dev/null
    uri="$(tests/pg.sh start "$T/pg" 2>/dev/null)" ||
      bench_die "could not restart PostgreSQL with pg_stat_statements"
    psql "${uri%/*}/postgres" -X -q -c "CREATE EXTENSION pg_stat_statements"
  fi
  tests/pg.sh createdb "$T/pg" gpugate
  PGURI="${uri%/*}/gpugate"
  PSQL=(psql "$PGURI" -X -q -t -A -v ON_ERROR_STOP=1)
  export GPUGATE_DATABASE_URL="$PGURI"
}

# BENCH_PG_STATEMENTS: print the cluster's costliest statements.
bench_pg_statements() {
  [[ -n "${BENCH_PG_STATEMENTS:-}" && -n "${PGURI:-}" ]] || return 0
  psql "${PGURI%/*}/postgres" -X -q -c "
    SELECT calls, round(total_exec_time) AS total_ms,
           round(mean_exec_time::numeric, 3) AS mean_ms, rows,
           left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 40" \
    >"$T/pg_stat_statements.txt" 2>&1 || true
  bench_log "statements by time (BENCH_PG_STATEMENTS):"
  cat "$T/pg_stat_statements.txt" >&2
}

# bench_pg_fresh NAME: a new cluster for the next part of a bench, so
# that no part runs among another's pages. The one so far is stopped and
# removed (kept as $T/pg-NAME under BENCH_KEEP). Each part's database
# is created by the part; PGURI names the new cluster's gpugate.
bench_pg_fresh() {
  bench_pg_statements
  tests/pg.sh stop "$T/pg" >/dev/null 2>&1 || true
  if [[ -n "${BENCH_KEEP:-}" ]]; then
    mv -- "$T/pg" "$T/pg-$1"
  else
    rm -rf -- "$T/pg"
  fi
  bench_pg_start
}

# Wait for a port file; print the port.
bench_wait_port() {
  local file="$1" pid="$2" i
  for ((i = 0; i < 300; i++)); do
    if [[ -s "$file" ]]; then
      cat "$file"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || bench_die "$3 exited during start-up"
    sleep 0.1
  done
  bench_die "$3 did not start within 30 s"
}

# Start gpugate serve with the current GPUGATE_* environment; sets
# GG_PID and GG_URL.
bench_start_gpugate() {
  rm -f "$T/gpugate.port"
  GPUGATE_LISTEN=127.0.0.1:0 GPUGATE_PORT_FILE="$T/gpugate.port" \
    "$BIN/gpugate" serve 2>>"$T/gpugate.log" &
  GG_PID=$!
  BENCH_PIDS+=("$GG_PID")
  GG_URL="http://127.0.0.1:$(bench_wait_port "$T/gpugate.port" "$GG_PID" gpugate)"
}

# A real Batch's latency per call, median/p99 in ms (the emulator's
# EMU_LATENCY_MS): on by default, BENCH_BATCH_LATENCY=0 for an emulator
# that answers at once, or another spec (tests/emulator/emu_latency.h).
BENCH_LATENCY_DEFAULT="create:300/1500,get:80/400,list:150/800,cancel:250/1200,delete:250/1200"
if [[ "${BENCH_BATCH_LATENCY-}" == 0 ]]; then
  BENCH_LATENCY=""
else
  BENCH_LATENCY="${BENCH_BATCH_LATENCY:-$BENCH_LATENCY_DEFAULT}"
fi
# "create 300 ms" or "0 ms", for the tables
bench_latency_label() {
  local m
  m="$(sed -n 's/.*create:\([0-9]*\).*/\1/p' <<<"$BENCH_LATENCY")"
  if [[ -n "$m" && "$m" != 0 ]]; then echo "create ${m} ms"; else echo "0 ms"; fi
}

# Start the Batch emulator with the current EMU_* environment (and the
# latency model, BENCH_LATENCY, unless EMU_LATENCY_MS is set); sets EMU_PID
# and EMU_URL.
bench_start_emulator() {
  rm -f "$T/emu.port"
  EMU_LISTEN=127.0.0.1:0 EMU_PORT_FILE="$T/emu.port" EMU_EXIT_WITH_PARENT=true \
    EMU_LATENCY_MS="${EMU_LATENCY_MS-$BENCH_LATENCY}" \
    EMU_LOG_LEVEL=warn "$BIN/batch_emulator" 2>>"$T/emulator.log" &
  EMU_PID=$!
  BENCH_PIDS+=("$EMU_PID")
  EMU_URL="http://127.0.0.1:$(bench_wait_port "$T/emu.port" "$EMU_PID" "the emulator")"
}

# Admission to Batch create per job on the database PSQL names: from the
# latest admission of the attempt to its BatchJobCreated event. Prints
# "p50 p99 count" (seconds).
bench_admission_to_create() {
  "${PSQL[@]}" -F ' ' -c "
    SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 3), 0),
           coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::numeric, 3), 0),
           count(*)
    FROM (SELECT extract(epoch FROM c.at - (SELECT max(a.at) FROM job_events a
                 WHERE a.job_id = c.job_id AND a.attempt = c.attempt
                 AND a.to_state = 'ADMITTED' AND a.id < c.id)) AS d
          FROM job_events c WHERE c.reason = 'BatchJobCreated') x
    WHERE d IS NOT NULL"
}

bench_token() {
  "$BIN/gpugate" token --team "$1" --role "$2" --ttl 7200
}

# The table (Markdown): one row per figure. bench_row FIGURE GPUGATE
# BASELINE RATIO GOAL MET, with MET one of yes / NO / - .
BENCH_FMT='| %-40s | %-24s | %-38s | %-5s | %-9s | %-3s |\n'
bench_header() {
  # shellcheck disable=SC2059
  printf "$BENCH_FMT" figure gpugate baseline ratio goal met
  printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..42})" \
    "$(printf -- '-%.0s' {1..26})" "$(printf -- '-%.0s' {1..40})" \
    "$(printf -- '-%.0s' {1..7})" "$(printf -- '-%.0s' {1..11})" \
    "$(printf -- '-%.0s' {1..5})"
}

bench_row() {
  # shellcheck disable=SC2059
  printf "$BENCH_FMT" "$@"
}

# awk arithmetic: bench_calc 'EXPR' (e.g. bench_calc "$a / $b")
bench_calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
# 1 when the awk condition holds
bench_true() { awk "BEGIN { exit !($1) }"; }

# CPU, in clock ticks (USER_HZ, user + system, every thread), used so far by
# process PID and the children it has reaped (fields 14–17 of
# /proc/PID/stat; the name in field 2 has no space for the processes
# measured here). 0 when the process is gone.
bench_proc_ticks() {
  awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0
}

# PostgreSQL's CPU so far: the postmaster, its live children (backends,
# WAL writer, autovacuum) and the children it has reaped — a pgbench run's
# backends exit with it and are counted through the postmaster.
bench_pg_ticks() {
  local pm t p
  pm="$(head -1 "$T/pg/data/postmaster.pid")"
  t="$(bench_proc_ticks "$pm")"
  for p in $(pgrep -P "$pm"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# The postmaster's live children (backends, background processes).
bench_pg_children() {
  pgrep -c -P "$(head -1 "$T/pg/data/postmaster.pid")" || true
}

# Wait (at most 5 s) until the postmaster has at most N children: the
# backends of a client that exited (pgbench) are reaped, so their CPU is in
# the postmaster's count of reaped children.
bench_pg_settle() {
  local i
  for ((i = 0; i < 50; i++)); do
    (($(bench_pg_children) <= $1)) && return 0
    sleep 0.1
  done
}

# µs of CPU per request: bench_us_per TICKS_BEFORE TICKS_AFTER REQUESTS
bench_us_per() {
  awk -v b="$1" -v a="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (n > 0) printf "%.0f", (a - b) * 1e6 / hz / n; else print "-" }'
}

# CPU ticks of this shell's reaped children so far (bash's `times`, second
# line: children's user and system time), for a client such as pgbench
# that has exited by the time it could be read from /proc
# (call it as a plain command, not in a pipe or $(…): those run in a
# subshell with children of its own); prints nothing, sets BENCH_CHILD_TICKS
bench_children_ticks() {
  times >"$T/times"
  BENCH_CHILD_TICKS="$(awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {
    split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%.0f", ((u[1] * 60 + u[2]) + (s[1] * 60 + s[2])) * hz }' "$T/times")"
}
