#!/usr/bin/env bash
# bench/http.sh — gpugate's HTTP figures next to baselines measured in the
# same run, on the same machine, against the same throwaway PostgreSQL
# (`make bench` runs it; it prints figures and asserts nothing).
#
#   submit   POST /v1/teams/bench/jobs, HS256 member token, the README's
#            submission example (SPEC §3: 2 tasks × 2 L4 GPUs, env, labels),
#            wrk -t2 -c32 with bench/wrk/submit.lua, into a cluster queue
#            whose quota never runs out (every job is admitted; no Batch
#            backend, so nothing is dispatched)
#      vs    pgbench -c32 -j2 -M prepared: one INSERT per transaction of the
#            same row into bench_jobs, a copy of the jobs table (columns,
#            defaults, constraints and all its indexes) whose spec is a spec
#            gpugate stored in the submit run. Goal ratio ≥ 0.25 (issue
#            10). Each side runs twice, A B B A (gpugate, pgbench, …,
#            pgbench, gpugate), and the row divides the means, as the
#            slurmrestd row does below: on this VM gpugate's two submit
#            runs of one bench/http.sh run, minutes apart, made 4,220 and
#            5,887 req/s at the same CPU per job (2026-11-26).
#   get      GET /v1/teams/bench/jobs/{id}, wrk -t2 -c32, bench/wrk/get.lua
#            cycling over every job the submit run created
#      vs    pgbench -c32 -j2 -M prepared: SELECT * FROM jobs WHERE
#            team = 'bench' AND seq = :n over the same jobs (one probe of
#            the b-tree jobs_team_seq: pgbench cannot draw the text ids, and
#            the lookup is the same single index probe as by primary key).
#            Goal ≥ 0.7.
#   healthz  GET /healthz, wrk -t2 -c32
#      vs    build/bench_hello (bench/hello.c): libmicrohttpd with gpugate's
#            threading model (epoll internal thread, pool of 8). Goal ≥ 0.8.
#            The two alternate twice; each keeps its better run (the
#            cheapest requests are the most sensitive to other load).
#   RSS      the gateway's peak resident set (VmHWM, and the largest VmRSS
#            sampled every 100 ms) after the submit run. Goal ≤ 64 MiB.
#            It grows with the jobs the run leaves active, not with the
#            requests: the replica is also the admission leader, whose
#            in-memory state (control/admission.c, scheduler/state.c) holds
#            every PENDING and ADMITTED job, and with no Batch backend every
#            submitted job stays ADMITTED. Measured 2026-11-26 with a second
#            replica serving the submissions and the first leading: after
#            15,000, 30,000 and 46,000 submitted jobs the serving replica
#            stayed at 12.7 MiB (peak 14.7) while the leader grew 22.3 →
#            27.0 → 33.5 MiB, ~0.36 KiB per active job (the job's 240-byte
#            entry, its id, the hash index and order slots, malloc's
#            overhead), and the single-replica RSS of a run is 12 MiB plus
#            that per job (34 MiB after ~45,000 jobs on 2026-11-24).
#   slurm    bench/slurm.sh in the same run: slurmrestd 22.05 (JWT auth,
#            one-node cluster on loopback) submitting a held 2-task batch
#            job and reading jobs back by id, wrk -t2 -c32. Goals: submit
#            ÷ slurmrestd submit ≥ 2, get ÷ slurmrestd read ≥ 5. The
#            submissions are compared in an A B B A order: gpugate's
#            submit run, slurmrestd's two, then gpugate's again; the row
#            divides the means of each side's two runs, so that a drift of
#            the machine's speed during the run weighs on both sides alike
#            (on this VM, runs minutes apart differed by up to 60 %:
#            slurmrestd 1,546–2,536 submits/s and gpugate 3,541–4,050 on
#            2026-11-26).
#   100k     100,000 PENDING jobs inserted with SQL into a cluster queue
#            with stop_policy Hold, then the submit run again into the
#            main queue. Goal: ÷ the mean of the two submit runs at ~0
#            pending ≥ 0.9.
#   CPU      the CPU each side's processes spent per request in the
#            measured runs, from /proc (user + system, every thread, and
#            the children a process reaped): gpugate + PostgreSQL (the
#            postmaster and all its backends, the WAL writer, autovacuum;
#            a pgbench run's backends once the postmaster has reaped them,
#            which the script waits for)
#            against slurmrestd + slurmctld (slurmd and munged are printed
#            too; they do nothing for a held job and no slurmdbd runs:
#            AccountingStorageType=accounting_storage/none), and against
#            pgbench + PostgreSQL. Goals (issue 22): per submit ≤ 0.5 ×
#            slurmrestd + slurmctld (the means of each side's two runs), per
#            read ≤ 0.2 ×. Every write run (gpugate's submits, pgbench's
#            INSERTs) is charged the VACUUM (ANALYZE) of the rows it left
#            and a CHECKPOINT of the pages it dirtied, run right after it
#            (charge_vacuum), so that no run pays for
#            another's: autovacuum's workers had processed a run's rows
#            during the next measured run, and the reads (2026-11-27:
#            PostgreSQL per GET 166 µs before the reads came after a
#            VACUUM and the join's removal, 81 after) and gpugate's second
#            submit run (438 µs of PostgreSQL per submit, right after
#            pgbench's second INSERT run, against 299 in its first) paid
#            for rows other runs wrote. Work per request moves much less than requests/s
#            between runs on a shared VM: a run on a busy machine shows
#            whether the work per request moved or only the time (though a
#            loaded machine raises the work too: cache misses, more context
#            switches, smaller batches in the leader's cycles).
#
# Each measured run lasts BENCH_SECONDS (default 10) after a 2 s warm-up of
# the same load. gpugate runs with GPUGATE_RATE_LIMIT_RPS=0 (off),
# GPUGATE_LOG_LEVEL=warn and its default 8 HTTP threads / 8 database
# connections. Client and servers share the machine's cores: wrk and
# pgbench both get 2 threads.
#
# Order: healthz (gpugate and hello alternately, twice); submit (gpugate,
# with the RSS sampler); pgbench INSERT; get (gpugate); pgbench SELECT;
# slurmrestd (two submit runs, read); pgbench INSERT again; submit
# (gpugate) again; the 100,000 pending jobs and the submit run at 100k.
# Each write run is followed by a VACUUM (ANALYZE) and a CHECKPOINT charged to it
# (charge_vacuum; it also gives the planner the statistics autovacuum
# would gather within its 1-minute naptime — without them it still takes
# the fresh jobs table for empty and the prepared reads scan it).
#
# What limits the figures (2-core development machine, Debian 12; found
# with BENCH_KEEP=1 and log_min_duration_statement on the kept cluster):
#   submit   a POST is one statement (the version check, the job, its
#            event; the Idempotency-Key claim only when a key is sent;
#            the targets come from the replica's cache; the loop is woken
#            by one coalesced NOTIFY per replica) against pgbench's one
#            INSERT, and every job then costs the admission leader its
#            share of a batched UPDATE (not HOT: the state is indexed) and
#            event. CPU per submitted job, from /proc during the run
#            (2026-11-25, migration 0016): PostgreSQL ~255 µs (the
#            submitting backends ~150, executor set-up and index
#            insertions the most of it; the leader's backend ~50, index
#            insertions 40 % of that; the WAL writer ~20), gpugate ~115
#            µs (the kernel's socket work, Jansson, malloc), wrk ~20: both
#            cores are busy. The leader keeps its state in memory
#            (control/admission.c) and plans its batched statements per
#            call, so a run does not slow down as jobs accumulate.
#            2026-11-26: the leader's thread had cycled back to back under
#            the stream, each cycle passing over every active job, 30–240
#            µs of gpugate's CPU per job (more at 100,000 pending; perf:
#            the cycle build's name lookups and strcmp); with submissions
#            paced (control/loop.c) 5–15 µs, and PostgreSQL's share per job
#            fell with the cycles' statements (~280–340 µs in the same
#            day's runs, 370–470 before). The rest is as above: the
#            statement's executor set-up and index insertions (six at the
#            insert, five more at the admission update) and commit. The
#            team's foreign-key check (perf: ~7 % of PostgreSQL's CPU; it
#            locked the team's row FOR KEY SHARE at every insert, one
#            MultiXact among concurrent submitters) is gone since
#            migration 0017. 2026-11-27 (perf, dwarf call graphs of the
#            backends): index insertions a fifth of PostgreSQL's CPU,
#            executor start-up 15 %, the state's CHECK 6 % (a table's
#            CHECK is parsed from its text and planned again by every
#            statement that writes the table). Migration 0026: the CHECK
#            is a domain's (prepared once per backend), one b-tree fewer
#            at the insert (the summary's and the pending pages' indexes
#            merged), one fewer per event (job_events keyed by (job_id,
#            id) alone), the labels GIN with jsonb_path_ops; the INSERT
#            returns only the columns the reply reads (not RETURNING *);
#            the reply is written from the row (lib/jsonw.c), and no
#            snprintf runs per byte of the request id or per field
#            validated. CPU per submit, gpugate + PostgreSQL: 525 and
#            574 µs in two runs before, 440 and 428 after (gpugate 120–126
#            µs, PostgreSQL 296–336); the two builds alternately on one
#            private cluster: 479–531 µs before, 396–407 after.
#   get      one statement; verified tokens are cached (perf: libjwt gone,
#            libcrypto 1.6 %); the kernel's socket and scheduler work of
#            the two hops wrk → gpugate → PostgreSQL is ~47 %, libc ~25 %,
#            Jansson ~15 % before the stored spec was spliced into the
#            reply as text instead of parsed and written again (2026-11-26:
#            gpugate's CPU per read 78–100 µs against 81–144 in alternate
#            runs of the two builds), and gpugate reaches PostgreSQL over 8
#            pooled connections where pgbench holds 32. 2026-11-27 (perf,
#            private cluster): the statement's executor start-up was a
#            quarter of PostgreSQL's CPU per GET, its joins most of it; the
#            join to flavors is gone (the price comes with the replica's
#            copy, db/prices.c: 130 → 93 µs per GET in gpugate's
#            backends), the join to job_positions stays (a pending job's
#            place; ~12 µs, and the fair-share join ~15 µs, pgbench on
#            the statement). In gpugate, libmicrohttpd zeroing each
#            connection's 64 KiB pool between requests was 10 % (32 KiB
#            now: 5 %), building and writing the reply with Jansson ~25 %
#            (since 2026-11-27 the reply is written straight from the row,
#            lib/jsonw.c: gpugate's CPU per GET 65–71 µs in two runs
#            before, 54–64 in six after), the kernel's socket work
#            ~27 %.
#   healthz  the same libmicrohttpd set-up; the difference is gpugate's
#            per-request work (routing, request id, metrics, access log
#            level check).
#
# BENCH_KEEP=1 keeps the temp dir (logs, PostgreSQL) for inspection.
set -euo pipefail
BENCH_NAME=bench/http.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SECS="${BENCH_SECONDS:-10}"
CONNS=32

bench_setup build/bench_hello
bench_need wrk wrk

# --- administrator objects: quota that never runs out --------------------
cat >"$T/objects.json" <<'EOF'
{
  "priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},
  "flavors": {"l4-bench": {"provisioning_model": "STANDARD", "machine_type": "g2-standard-24",
    "accelerator_type": "nvidia-l4", "gpus_per_vm": 2, "locations": ["us-central1"],
    "price_per_gpu_hour_usd": 0.71, "on_demand_price_per_gpu_hour_usd": 0.71}},
  "cluster_queues": {"cq-bench": {"flavors": [{"name": "l4-bench", "resources": {
    "gpu": {"nominal": 1000000000}, "cpu_milli": {"nominal": 1000000000000},
    "memory_mib": {"nominal": 1000000000000}}}]},
    "cq-held": {"stop_policy": "Hold", "flavors": [{"name": "l4-bench", "resources": {
    "gpu": {"nominal": 8}, "cpu_milli": {"nominal": 8000},
    "memory_mib": {"nominal": 40960}}}]}},
  "teams": {"bench": {"display_name": "Bench", "cost_center": "bench"}},
  "team_queues": {"bench": {"main": {"cluster_queue": "cq-bench"},
                            "held": {"cluster_queue": "cq-held"}}}
}
EOF
"$BIN/gpugate" apply "$T/objects.json" >/dev/null
export GPUGATE_BATCH_BACKEND=none
bench_start_gpugate
BENCH_TOKEN="$(bench_token bench member)"
export BENCH_TOKEN

HELLO_LISTEN=127.0.0.1:0 HELLO_PORT_FILE="$T/hello.port" "$BIN/bench_hello" \
  2>>"$T/hello.log" &
HELLO_PID=$!
BENCH_PIDS+=("$HELLO_PID")
HELLO_URL="http://127.0.0.1:$(bench_wait_port "$T/hello.port" "$HELLO_PID" bench_hello)"

# CPU ticks (USER_HZ) used so far by the gateway, and by PostgreSQL
cpu_ticks() { echo "$(bench_proc_ticks "$GG_PID") $(bench_pg_ticks)"; }

# wrk: run (warm-up, then measured); print requests/s; non-2xx fail the run.
# The CPU the gateway and PostgreSQL spent per request in the measured run
# goes to $T/cpu.last as "gpugate_us postgres_us".
wrk_rps() {
  local out non2xx before after n
  wrk -t2 -c"$CONNS" -d2s "$@" >/dev/null 2>&1 || true
  before="$(cpu_ticks)"
  out="$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "$@" 2>"$T/wrk.err")" ||
    bench_die "wrk failed: $(cat "$T/wrk.err")"
  after="$(cpu_ticks)"
  n="$(awk '/requests in/ {print $1}' <<<"$out")"
  read -r b_gg b_pg <<<"$before"
  read -r a_gg a_pg <<<"$after"
  echo "$(bench_us_per "$b_gg" "$a_gg" "${n:-0}") $(bench_us_per "$b_pg" "$a_pg" "${n:-0}")" >"$T/cpu.last"
  echo "${n:-0}" >"$T/n.last"
  echo "$out" >>"$T/wrk.log"
  non2xx="$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")"
  if [[ -n "$non2xx" && "$non2xx" != 0 ]] || grep -q 'HTTP' "$T/wrk.err"; then
    bench_log "wrk $*: ${non2xx:-some} failed responses:"
    head -5 "$T/wrk.err" >&2
  fi
  awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out"
}

# pgbench: warm-up, then measured; print transactions/s. The CPU pgbench
# and PostgreSQL spent per transaction in the measured run goes to
# $T/cpu.last as "pgbench_us postgres_us" (pgbench's from this shell's
# reaped children, the backends' through the postmaster).
pgbench_tps() {
  local out n b_cl b_pg a_cl a_pg pg_children
  local args=(-n -M prepared -c "$CONNS" -j 2 "$@")
  pg_children="$(bench_pg_children)"
  pgbench "${args[@]}" -T 2 "$PGURI" >/dev/null 2>&1 || true
  bench_pg_settle "$pg_children"
  bench_children_ticks
  b_cl=$BENCH_CHILD_TICKS
  b_pg="$(bench_pg_ticks)"
  pgbench "${args[@]}" -T "$SECS" "$PGURI" >"$T/pgbench.out" 2>&1 ||
    bench_die "pgbench failed: $(cat "$T/pgbench.out")"
  # its backends' CPU reaches the postmaster's count when it reaps them
  bench_pg_settle "$pg_children"
  a_pg="$(bench_pg_ticks)"
  bench_children_ticks
  a_cl=$BENCH_CHILD_TICKS
  out="$(cat "$T/pgbench.out")"
  echo "$out" >>"$T/pgbench.log"
  n="$(awk '/^number of transactions actually processed:/ {print $NF}' <<<"$out")"
  echo "$(bench_us_per "$b_cl" "$a_cl" "${n:-0}") $(bench_us_per "$b_pg" "$a_pg" "${n:-0}")" >"$T/cpu.last"
  echo "${n:-0}" >"$T/n.last"
  awk '/^tps = / {printf "%.0f", $3}' <<<"$out"
}

# Each write run is charged its own vacuum debt, and only its own: right
# after it, VACUUM (ANALYZE) the rows it left, and add the PostgreSQL CPU
# that took, per request of the run, to its figure in $T/cpu.last (the
# vacuum's share alone to $T/vacuum.last). Left to autovacuum, a run's
# debt was paid during whichever measured run came next: gpugate's second
# submit run, right after pgbench's second INSERT run (~140,000 rows),
# showed 438 µs of PostgreSQL per submit against 299 in its first run
# minutes earlier (2026-11-27), and pgbench's INSERT runs 118-198 µs.
# The same goes for the pages a run dirtied: a CHECKPOINT after the vacuum
# writes them out on the run's account, not by the checkpointer, the
# background writer or an evicting backend during the next run (the
# cluster has PostgreSQL's default 128 MB of shared buffers, and one
# pgbench INSERT run leaves ~170,000 rows of bench_jobs).
charge_vacuum() {
  local n b a v c p pg_children
  n="$(cat "$T/n.last")"
  pg_children="$(bench_pg_children)"
  b="$(bench_pg_ticks)"
  "${PSQL[@]}" -c "VACUUM (ANALYZE)"
  "${PSQL[@]}" -c "CHECKPOINT"
  bench_pg_settle "$pg_children"
  a="$(bench_pg_ticks)"
  v="$(bench_us_per "$b" "$a" "$n")"
  read -r c p <"$T/cpu.last"
  [[ "$p" == - || "$v" == - ]] || p=$((p + v))
  echo "$c $p" >"$T/cpu.last"
  echo "$v" >"$T/vacuum.last"
}

rss_kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$GG_PID/status"; }

# the cheapest requests feel a busy neighbour most: alternate the two
# servers twice and keep each one's better run
bench_log "healthz: gpugate vs bench_hello, alternately, 2 × ${SECS} s each"
healthz_gg=0
healthz_hello=0
for _ in 1 2; do
  r="$(wrk_rps "$GG_URL/healthz")"
  ((r > healthz_gg)) && healthz_gg=$r
  r="$(wrk_rps "$HELLO_URL/healthz")"
  ((r > healthz_hello)) && healthz_hello=$r
done

bench_log "submit: gpugate, then pgbench INSERT (${SECS} s each)"
(
  max=0
  while kill -0 "$GG_PID" 2>/dev/null; do
    r="$(awk '$1 == "VmRSS:" {print $2}' "/proc/$GG_PID/status" 2>/dev/null || echo 0)"
    ((r > max)) && max=$r && echo "$max" >"$T/rss.max"
    sleep 0.1
  done
) &
RSS_PID=$!
BENCH_PIDS+=("$RSS_PID")
rss_before="$(rss_kib VmRSS)"
submit_gg="$(wrk_rps -s bench/wrk/submit.lua "$GG_URL/v1/teams/bench/jobs")"
charge_vacuum
cpu_submit="$(cat "$T/cpu.last")"
vac_submit="$(cat "$T/vacuum.last")"
kill "$RSS_PID" 2>/dev/null || true
wait "$RSS_PID" 2>/dev/null || true
rss_max="$(cat "$T/rss.max" 2>/dev/null || echo 0)"
rss_hwm="$(rss_kib VmHWM)"
jobs_made="$("${PSQL[@]}" -c "SELECT count(*) FROM jobs")"
# (the VACUUM (ANALYZE) after the run also gives the planner the statistics
# autovacuum would have within its 1-minute naptime: without them it still
# takes the jobs table for empty)

# the baseline row: a copy of the jobs table, and a spec gpugate stored
"${PSQL[@]}" <<'EOF'
CREATE TABLE bench_jobs (LIKE jobs INCLUDING ALL);
CREATE SEQUENCE bench_jobs_seq OWNED BY bench_jobs.seq;
ALTER TABLE bench_jobs ALTER seq SET DEFAULT nextval('bench_jobs_seq');
EOF
spec="$("${PSQL[@]}" -c "SELECT spec FROM jobs LIMIT 1")"
cat >"$T/insert.sql" <<EOF
INSERT INTO bench_jobs (id, team, queue, cluster_queue, name, priority_class, priority, can_preempt, state, gpu, cpu_milli, memory_mib, max_run_duration_s, labels, spec) VALUES ('j-' || substr(md5(random()::text || :client_id::text), 1, 14), 'bench', 'main', 'cq-bench', 'finetune-gemma-2b', 'default', 10, false, 'PENDING', 4, 4000, 20480, 3600, '{"experiment": "sql-tune"}', :spec);
EOF
# the spec travels as a parameter, as gpugate sends it
submit_pg="$(pgbench_tps -D spec="$spec" -f "$T/insert.sql")"
charge_vacuum
cpu_pg_submit="$(cat "$T/cpu.last")"
vac_pg_submit="$(cat "$T/vacuum.last")"

# The reads come after the VACUUM of the rows the submit and INSERT runs
# left (charge_vacuum): before, autovacuum's workers ran during the reads,
# and their CPU, which the inserts caused, was charged to the reads
# (bench_pg_ticks counts every child of the postmaster).
bench_log "get by id: gpugate over the $jobs_made submitted jobs, then pgbench SELECT (${SECS} s each)"
"${PSQL[@]}" -c "SELECT '/v1/teams/bench/jobs/' || id FROM jobs ORDER BY seq" >"$T/paths"
export BENCH_PATHS="$T/paths"
get_gg="$(wrk_rps -s bench/wrk/get.lua "$GG_URL")"
cpu_get="$(cat "$T/cpu.last")"
read -r seq_lo seq_hi < <("${PSQL[@]}" -F ' ' -c "SELECT min(seq), max(seq) FROM jobs")
cat >"$T/select.sql" <<EOF
\set n random($seq_lo, $seq_hi)
SELECT * FROM jobs WHERE team = 'bench' AND seq = :n;
EOF
get_pg="$(pgbench_tps -f "$T/select.sql")"
cpu_pg_get="$(cat "$T/cpu.last")"

# --- the peer: slurmrestd on a one-node Slurm cluster, same wrk load -------
bench_log "slurmrestd: submit and read by id (bench/slurm.sh, ${SECS} s each)"
slurm_submit=0
slurm_read=0
slurm_runs="-"
slurm_cpu_submit="-"
slurm_cpu_submit2="-"
slurm_cpu_read="-"
slurm_field() { sed -n "s/.*\b$1=\([0-9,]*\).*/\1/p" "$T/slurm.out"; }
if bench/slurm.sh "$T/slurm.out" && [[ -s "$T/slurm.out" ]]; then
  slurm_submit="$(slurm_field submit)"
  slurm_read="$(slurm_field read)"
  slurm_runs="$(slurm_field runs)"
  slurm_cpu_submit="$(slurm_field cpu_submit)"
  slurm_cpu_submit2="$(slurm_field cpu_submit2)"
  slurm_cpu_read="$(slurm_field cpu_read)"
else
  bench_log "bench/slurm.sh failed: its rows show 0"
fi

# pgbench's second INSERT run and gpugate's second submit run: A B B A
# around slurmrestd's two, and around pgbench's two
bench_log "submit: pgbench INSERT again, then gpugate again (${SECS} s each)"
submit_pg2="$(pgbench_tps -D spec="$spec" -f "$T/insert.sql")"
charge_vacuum
cpu_pg_submit2="$(cat "$T/cpu.last")"
vac_pg_submit2="$(cat "$T/vacuum.last")"
submit_gg2="$(wrk_rps -s bench/wrk/submit.lua "$GG_URL/v1/teams/bench/jobs")"
charge_vacuum
cpu_submit2="$(cat "$T/cpu.last")"
vac_submit2="$(cat "$T/vacuum.last")"
submit_gg_mean=$(((submit_gg + submit_gg2) / 2))
submit_pg_mean=$(((submit_pg + submit_pg2) / 2))

# --- submit with 100,000 jobs pending ----------------------------------------
# loaded with SQL into a stopped cluster queue (stop_policy Hold: admission
# leaves them pending), then the same submit run into the main queue
bench_log "submit at 100,000 pending: loading them, then gpugate (${SECS} s)"
"${PSQL[@]}" -v spec="$spec" <<'SQL'
INSERT INTO jobs (id, team, queue, cluster_queue, name, priority_class,
  priority, can_preempt, state, reason, gpu, cpu_milli, memory_mib,
  max_run_duration_s, labels, spec, created_at)
SELECT 'j-h' || lpad(g::text, 13, '0'), 'bench', 'held', 'cq-held',
  'held-' || g, 'default', 10, false, 'PENDING', 'QueueStopped', 4, 4000,
  20480, 3600, '{"experiment": "held"}', :'spec'::json,
  now() - interval '1 hour' + g * interval '1 ms'
FROM generate_series(1, 100000) g;
VACUUM (ANALYZE);
SQL
pending_now="$("${PSQL[@]}" -c "SELECT count(*) FROM jobs WHERE state = 'PENDING'")"
submit_gg_100k="$(wrk_rps -s bench/wrk/submit.lua "$GG_URL/v1/teams/bench/jobs")"
charge_vacuum
cpu_submit_100k="$(cat "$T/cpu.last")"
vac_submit_100k="$(cat "$T/vacuum.last")"

# --- the table ------------------------------------------------------------
ratio_row() { # FIGURE GG BASE BASE_LABEL GOAL
  local r met=NO
  if [[ "$3" == 0 ]]; then # a baseline that could not be measured
    bench_row "$1" "$2 req/s" "- $4" "-" ">= $5" "NO"
    return
  fi
  # met is decided on the exact ratio, not on the two decimals shown; a
  # ratio that rounds up to its goal without reaching it shows three
  r="$(bench_calc "$2 / $3")"
  bench_true "$2 / $3 >= $5" && met=yes
  [[ "$met" == NO ]] && bench_true "$r >= $5" && r="$(awk "BEGIN { printf \"%.3f\", $2 / $3 }")"
  bench_row "$1" "$2 req/s" "$3 $4" "$r" ">= $5" "$met"
}
cores="$(nproc)"
bench_log "done; machine: $cores cores, $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -r)"
echo
echo "bench/http.sh: wrk/pgbench -c$CONNS, 2 client threads, ${SECS} s runs; $cores cores"
bench_header
ratio_row "submit (means of 2)" "$submit_gg_mean" "$submit_pg_mean" "tx/s pgbench INSERT" 0.25
ratio_row "get by id (GET /v1/teams/T/jobs/ID)" "$get_gg" "$get_pg" "tx/s pgbench SELECT" 0.7
ratio_row "submit at $pending_now pending" "$submit_gg_100k" "$submit_gg_mean" "req/s submit at ~0 pending" 0.9
ratio_row "submit vs slurmrestd (means of 2)" "$submit_gg_mean" "$slurm_submit" "req/s slurmrestd job submit" 2
ratio_row "get by id vs slurmrestd" "$get_gg" "$slurm_read" "req/s slurmrestd job read" 5
ratio_row "/healthz" "$healthz_gg" "$healthz_hello" "req/s MHD hello" 0.8
# CPU per request, both sides' servers (and pgbench, the client that is its
# own server's only work): lower is better, so the goal is a ceiling
cpu_row() { # FIGURE GG_US BASE_US BASE_LABEL GOAL
  local r met=NO
  if [[ -z "$3" || "$3" == 0 || "$3" == - || -z "$2" || "$2" == - ]]; then
    bench_row "$1" "${2:--} µs" "- $4" "-" "${5:+<= }${5:--}" "${5:+NO}"
    return
  fi
  r="$(bench_calc "$2 / $3")"
  if [[ -z "$5" ]]; then
    met=-
  else
    bench_true "$2 / $3 <= $5" && met=yes
    [[ "$met" == NO ]] && bench_true "$r <= $5" && r="$(awk "BEGIN { printf \"%.3f\", $2 / $3 }")"
  fi
  bench_row "$1" "$2 µs" "$3 µs $4" "$r" "${5:+<= }${5:--}" "$met"
}
sum2() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "") print "-"; else print a + b }'; }
# "x y" → x + y; "a,b,c,d" → a + b (slurmrestd + slurmctld)
pair_sum() { read -r x y <<<"$1"; sum2 "$x" "$y"; }
slurm_pair() { awk -F, '{ if (NF < 2) print "-"; else print $1 + $2 }' <<<"$1"; }
mean2() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.0f", (a + b) / 2 }'; }
gg_cpu_submit="$(mean2 "$(pair_sum "$cpu_submit")" "$(pair_sum "$cpu_submit2")")"
gg_cpu_get="$(pair_sum "$cpu_get")"
cpu_row "CPU per submit vs slurmrestd+slurmctld" "$gg_cpu_submit" \
  "$(mean2 "$(slurm_pair "$slurm_cpu_submit")" "$(slurm_pair "$slurm_cpu_submit2")")" "slurmrestd+slurmctld" 0.5
cpu_row "CPU per read vs slurmrestd+slurmctld" "$gg_cpu_get" "$(slurm_pair "$slurm_cpu_read")" "slurmrestd+slurmctld" 0.2
cpu_row "CPU per submit vs pgbench+PostgreSQL" "$gg_cpu_submit" \
  "$(mean2 "$(pair_sum "$cpu_pg_submit")" "$(pair_sum "$cpu_pg_submit2")")" "pgbench+PostgreSQL INSERT" ""
cpu_row "CPU per read vs pgbench+PostgreSQL" "$gg_cpu_get" "$(pair_sum "$cpu_pg_get")" "pgbench+PostgreSQL SELECT" ""
rss_mib="$(bench_calc "(${rss_hwm:-0} > ${rss_max:-0} ? ${rss_hwm:-0} : ${rss_max:-0}) / 1024")"
met=NO
bench_true "$rss_mib <= 64" && met=yes
bench_row "gateway RSS, submit run (peak)" "$rss_mib MiB" "$(bench_calc "${rss_before:-0} / 1024") MiB before; $jobs_made jobs after" "-" "<= 64 MiB" "$met"
echo
echo "submit runs, in order: gpugate $submit_gg; pgbench INSERT $submit_pg; slurmrestd $slurm_runs;" \
  "pgbench INSERT $submit_pg2; gpugate $submit_gg2 (req/s, tx/s)"
echo "CPU per request in the measured runs, µs (gpugate PostgreSQL):" \
  "submit $cpu_submit; submit again $cpu_submit2;" \
  "submit at 100k pending $cpu_submit_100k; get $cpu_get"
echo "(PostgreSQL: the postmaster and every child, autovacuum included; each write" \
  "run also the VACUUM (ANALYZE) and CHECKPOINT of what it left, run right after it, µs per" \
  "request: submit $vac_submit, submit again $vac_submit2, submit at 100k pending" \
  "$vac_submit_100k; pgbench INSERT $vac_pg_submit, again $vac_pg_submit2; so no" \
  "run pays for another's rows, and the reads none)"
echo "CPU per transaction, µs (pgbench PostgreSQL): INSERT $cpu_pg_submit; INSERT again $cpu_pg_submit2;" \
  "SELECT $cpu_pg_get"
echo "CPU per request, µs (slurmrestd,slurmctld,slurmd,munged): submit $slurm_cpu_submit;" \
  "submit again $slurm_cpu_submit2; read $slurm_cpu_read"
