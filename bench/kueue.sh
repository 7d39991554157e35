#!/usr/bin/env bash
# bench/kueue.sh — gpugate end to end through the Batch emulator
# (tests/emulator): the dispatch rate over 4 regions, and Kueue's
# scheduler-performance baseline shape from submit to completion
# (`make bench` runs it; it prints figures and asserts nothing).
#
# 1. Dispatch rate. Four regions (us-central1, us-east4, europe-west4,
#    asia-east1), one flavor over them and one cluster queue with ample
#    quota. DISPATCH_JOBS (2,000) 1-CPU jobs, round-robin over the regions
#    (each names its region), each running an hour (EMU_RUN_MS), are
#    submitted (build/bench_driver burst, 32 connections) while the queue
#    is held (stop_policy Hold); then the queue is released, the next
#    admission cycle admits every job, and
#    only the dispatcher paces the creates, without submits competing for
#    the machine. From the emulator's request log (GET /emulator/requests):
#    per region, successful creates per second from its first to its last
#    create, and the most creates in any 1-second window; and every 429 the
#    emulator answered. Goal: Batch's quota of 6,000 mutations per minute
#    per region (100/s), with zero 429s. gpugate's deployment-wide budget
#    (control/budget.c) allows 98/s per region after a burst of 30, which
#    keeps every 60-second window within 6,000. The emulator enforces
#    Batch's quota strictly (EMU_MUTATION_QUOTA, 6,000 in any 60 s), so a
#    breach would show as 429s; the busiest second may see up to 128
#    creates (the burst and a second's refill), then 98/s.
#
# 2. Kueue baseline. kubernetes-sigs/kueue
#    test/performance/scheduler/configs/baseline/generator.yaml: 5 cohorts
#    × 6 cluster queues (nominal 20 CPU, borrowing limit 100 CPU, preemption
#    within the queue LowerPriority, reclaim within the cohort Any), per
#    queue 350 small (1 CPU, 200 ms, priority 50, one every 100 ms), 100
#    medium (5 CPU, 500 ms, priority 100, every 500 ms) and 50 large
#    (20 CPU, 1 s, priority 200, every 1.2 s) — 15,000 jobs, arrivals over
#    60 s. Here CPUs are cpu_milli quota of one flavor (no GPUs) offered in
#    the four regions; jobs name a region round-robin, so creates spread
#    over four 100/s budgets. Every job goes through the API
#    (build/bench_driver kueue, on the generator's schedule), is admitted by
#    the admission loop, created in the emulator by the dispatcher, runs its
#    Kueue runtime (the job's EMU_RUN_MS; EMU_START_MS=0, EMU_CANCEL_MS=0 so
#    that the emulator adds nothing but the runtime), and completes through
#    Pub/Sub push (EMU_PUSH_URL → POST /v1/batch/notifications). The wall
#    time runs from the first submit to the last job's finished_at; the
#    floor is the makespan if admission, dispatch and notification took no
#    time (see bench/driver.c: max(fluid bound per cohort, arrival +
#    runtime) = 66.7 s for this shape). Goal ≤ 1.6× the floor (issue 10;
#    the first round asked 1.25). For
#    reference, Kueue's own CI records about 351 s for this shape
#    (configs/baseline/rangespec.yaml), i.e. ≈ 5.3×. With the latency
#    model on (issue 22: goal ≤ 1.8×), a row also gives the floor if every
#    job held its quota through the model's mean create as well (a job
#    holds its quota from admission until it ends, as a Kueue workload
#    does from its quota reservation): for create:300/1500 the mean is
#    381 ms and that floor 101.7 s, so 1.8× the floor (120.1 s) is 1.18×
#    of it, where without latency 1.6× leaves 1.6×.
#    The admission leader reconciles its in-memory state with the
#    database every 10 s of this run (GPUGATE_ADMISSION_RECONCILE_S=10);
#    the row "admission state drift" is gpugate_admission_state_drift_total
#    at the end: the jobs that differed (goal 0).
#    KUEUE_SCALE (default 1) stretches every interval and runtime by that
#    factor (the floor scales with it); KUEUE_TIMEOUT_S (default 600) stops
#    waiting for completions.
#
# gpugate runs with its defaults (admission interval 1 s, woken by every
# submit and state change; sync every 10 s; 8 HTTP threads),
# GPUGATE_RATE_LIMIT_RPS=0 and GPUGATE_LOG_LEVEL=warn.
#
# What limits the figures (2-core development machine, Debian 12; found
# with BENCH_PG_LOG_MS=30, which logs the slower statements):
#   dispatch  each region's budget: control/dispatch.c runs 4 dispatcher
#             workers per replica that lease tokens from one bucket per
#             region for the deployment (30 burst, then 98/s); a claim
#             skips the regions whose bucket is empty, so no region waits
#             for another's. Each region runs at its bucket's limit while
#             it has creates (the burst, then 98/s). Together 326-372
#             creates/s before 2026-11-26, when a claim took 3 round trips
#             and recording a create 5 (the 4 workers waited on them); 414/s
#             in the make bench after they became 1 and 1 (db/batch.c).
#   Kueue     The run has three phases (job events of a kept run,
#             BENCH_KEEP=1, 2026-11-26). Up to ~60 s the large jobs
#             (priority 200, 20 CPU) take nearly every cohort's quota:
#             ~25 admissions/s, quota-bound. Medium jobs fill what is
#             left, and every one of the ~1,100 admitted then is reclaimed
#             by a large job before it ends (Kueue's reclaim within the
#             cohort: the shape's own preemptions); small jobs never fit.
#             From 60 to ~75 s the medium jobs (priority 100) hold the
#             quota, ~200 admissions/s, quota-bound again. Then ~10,000
#             small jobs go at the rate of Batch's 4 × 98/s budget: that
#             phase alone needs ~26 s, so the shape cannot beat ~1.5× its
#             floor here (the floor counts no dispatch and no priority).
#             Until 2026-11-26 that last phase ran at 200-300 creates/s,
#             not 392: each job cost 27 database round trips in the
#             dispatchers and the Pub/Sub pushes (a claim 3, recording a
#             create 5, pushes 4 + 4 + 5 + 6), and with the two cores
#             saturated (perf -a: PostgreSQL 55 %, gpugate 28 %, the
#             emulator 13 %) each round trip waited for a core: 0.4-2.4 s
#             from admission to create, up to 1 s more before the RUNNING
#             push landed. Now a claim is one statement, a create is
#             recorded in one pipeline, and a push is decided unlocked and
#             written in one guarded statement (db/batch_report.c): ~9
#             round trips per job, and the last phase runs at 300-375
#             creates/s with the outbox ~1.3 s deep. Runs of the same
#             code still differ by 10 % here (101.5-115.3 s).
#             Before the emulator's lookups were hashed (it scanned every
#             job it had made on each create and tick) it took ~0.5 of a
#             core there, and the creates ran at 200-300/s (perf -a;
#             PostgreSQL ~0.9 of a core, gpugate ~0.5: BENCH_PG_STATEMENTS=1
#             names the outbox claim, the dispatcher's and the pushes'
#             single-row updates of jobs, the events, the leader's feed and
#             batched admissions and the queue positions).
#             Preemption churn was the first limit (issue 10): 6,000-35,000
#             evictions per run, most of jobs admitted and not yet
#             created, reclaimed within ~60 ms, readmitted, reclaimed
#             again (one job 632 times), at 2.3-3.7x the floor. Two
#             scheduler rules fixed it (scheduler/sched.c): a preemptor of
#             an earlier cycle is decided before every queue's head, and
#             every job that fits without borrowing goes before any
#             borrower. The ~2,300 preemptions left are the shape's own,
#             all in the first minute: large jobs preempting medium ones
#             in their queue (LowerPriority, ~1,600) and reclaims of
#             borrowed quota.
#             Regions: the driver deals each class's arrivals out over
#             the regions, one per region in each block of four (bench/
#             driver.c region_of): round-robin over all arrivals aliased
#             with the shape's period and loaded two regions of four, and
#             a hash of the arrival's index split the small jobs 2,525 to
#             2,687, so the busiest region's budget ended the run ~0.6 s
#             after the others'.
#             2026-11-27, with create:300/1500 ms: 124.0 s in a make
#             bench before the changes below (122.4 and 127.0 with the
#             first alone), 119.9-121.8 s in five runs after (this part
#             alone; 120.6 after the dispatch part), 126.8-128.5 in
#             three make bench runs (their fair-share runs 119.6-124.0).
#             The first shape of a make bench was slower because it ran
#             on the cluster the dispatch part had used (start_stack):
#             from ~100 s its creates fell from the budget's ~390/s to
#             200-340/s, and its jobs waited up to 2.5 s from admission
#             to create (job events, BENCH_KEEP=1), with PostgreSQL's
#             shared buffers full. Each part now has a cluster of its
#             own. The phases run one
#             after another, each near its own bound (BENCH_KEEP=1, job
#             rows): the large jobs hold the cohorts' quota until ~70 s
#             (1,500 × 20 CPU × 1.385 s held ÷ 600 CPU = 69 s; held, from
#             admission to the end Batch reports: 0.384 s to the create,
#             0.002 to RUNNING, 0.998 running; the floor counts 1.381);
#             the medium ones until ~92 s (135/s against 136); the 10,500
#             small ones at the four budgets, 385/s against 392 (26.8 s at
#             392). Quota in use, 6-second windows: 97-99.5 % from 6 s to
#             the small phase. So 1.8 × the floor (120.1 s) is within
#             ~1 s of what the quota and the budget allow here.
#             The changes: (1) the outbox claim (db/batch.c) read
#             batch_ops_due, whose oldest rows are those whose calls are
#             under way (~200 at 300 ms), each with a heap visit and a
#             look at pg_stat_activity: 0.8 ms a claim and 17 s of
#             PostgreSQL's time in a run (pg_stat_statements), a third of
#             it; it now reads an index of the rows no one holds
#             (migration 0027), 0.17 ms, and looks for lapsed leases once
#             a second. (2) The admission leader parsed every pending
#             job's allowed regions (JSON) on every cycle: most of its
#             CPU (malloc, free, Jansson; perf, ~0.23 of a core in the
#             small phase); now once per distinct list per cycle (db/
#             sched_regions.c). gpugate's CPU over the run: 70.7
#             s before, 49.0-51.8 after. (3) This script polled with a
#             new psql every second (~2 % of the machine, perf); one
#             psql now serves the whole wait.
#
# BENCH_KEEP=1 keeps the temp dir (logs, PostgreSQL) for inspection;
# BENCH_PG_LOG_MS=N sets log_min_duration_statement (in its pg/log);
# BENCH_PG_STATEMENTS=1 prints the costliest statements at the end;
# KUEUE_SKIP_DISPATCH=1 / KUEUE_SKIP_SHAPE=1 run only one part;
# KUEUE_SKIP_FAIR_SHARE=1 skips the shape's second run, with every cluster
# queue's usage_fair_sharing on (fair share over time; its own row).
set -euo pipefail
BENCH_NAME=bench/kueue.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

REGIONS=(us-central1 us-east4 europe-west4 asia-east1)
DISPATCH_JOBS="${DISPATCH_JOBS:-2000}"
SCALE="${KUEUE_SCALE:-1}"
TIMEOUT_S="${KUEUE_TIMEOUT_S:-600}"
PROJECT=bench-project

bench_setup build/batch_emulator build/bench_driver
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/push.secret"

# Start the emulator and gpugate on database $1 (created here), each part
# on a PostgreSQL cluster of its own (bench_pg_fresh): on the cluster the
# dispatch part had used, the shape's tables (~90 MB at its end, with the
# dispatch part's 17 MB beside them) outgrew PostgreSQL's default 128 MB
# of shared buffers, and the shape ran 125.2-125.9 s where it ran
# 120.4-120.7 s alone (2026-11-27: four runs and three, and 120.4 / 120.6 after
# the dispatch part on a new cluster / with 512 MB of shared buffers).
start_stack() {
  local db="$1"
  [[ -n "${PG_PART:-}" ]] && bench_pg_fresh "$PG_PART"
  PG_PART="$db"
  tests/pg.sh createdb "$T/pg" "$db"
  export GPUGATE_DATABASE_URL="${PGURI%/*}/$db"
  PSQL=(psql "$GPUGATE_DATABASE_URL" -X -q -t -A -v ON_ERROR_STOP=1)
  "$BIN/gpugate" migrate >/dev/null
  "$BIN/gpugate" apply "$T/$db.json" >/dev/null
  if [[ -n "${BENCH_PG_LOG_MS:-}" ]]; then # diagnosis: slow statements
    "${PSQL[@]}" -c "ALTER DATABASE $db SET log_min_duration_statement = $BENCH_PG_LOG_MS"
  fi
  bench_start_emulator
  export GPUGATE_BATCH_BACKEND=gcp GPUGATE_GCP_PROJECT="$PROJECT" \
    GPUGATE_BATCH_ENDPOINT="$EMU_URL" GCE_METADATA_HOST="${EMU_URL#http://}" \
    GPUGATE_PUBSUB_PUSH_SECRET_FILE="$T/push.secret"
  bench_start_gpugate
  # the emulator learns gpugate's port only now
  curl -fsS -X POST "$EMU_URL/emulator/config" -H 'Content-Type: application/json' \
    -d "{\"EMU_PUSH_URL\": \"$GG_URL/v1/batch/notifications?token=$(cat "$T/push.secret")\"}" \
    >/dev/null || bench_die "cannot configure the emulator"
}

stop_stack() {
  local ticks
  # gpugate's CPU (user + system) over the part, for comparing runs
  ticks="$(awk '{print $14 + $15}' "/proc/$GG_PID/stat" 2>/dev/null || echo '')"
  [[ -n "$ticks" ]] && bench_log "gpugate CPU: $(bench_calc "$ticks / $(getconf CLK_TCK)") s"
  kill -TERM "$GG_PID" 2>/dev/null || true
  wait "$GG_PID" 2>/dev/null || true
  kill -TERM "$EMU_PID" 2>/dev/null || true
  wait "$EMU_PID" 2>/dev/null || true
  BENCH_PIDS=()
}

# Successful creates as "region<TAB>status<TAB>epoch seconds", from the
# emulator's request log.
creates_tsv() {
  curl -fsS "$EMU_URL/emulator/requests" | jq -r '
    .requests[]
    | select(.method == "POST" and (.path | test("^/v1/projects/[^/]+/locations/[^/]+/jobs$")))
    | [(.path | split("/")[5]), .status,
       ((.time[0:19] + "Z" | fromdateiso8601) + ("0" + .time[19:26] | tonumber))]
    | @tsv'
}

rows=()
add_row() { rows+=("$(bench_row "$@")"); }

# The latency model's mean create in ms ("" without the model): the
# emulator draws median × exp(ln(p99 / median) / z99 × z), z standard
# normal, whose mean is median × exp(σ² / 2), σ = ln(p99 / median) / z99.
mean_create_ms() {
  [[ -n "$BENCH_LATENCY" ]] || return 0
  awk -v spec="$BENCH_LATENCY" 'BEGIN {
    n = split(spec, items, ",")
    for (i = 1; i <= n; i++) {
      if (items[i] !~ /^create:/) continue
      split(substr(items[i], 8), v, "/")
      m = v[1] + 0; p = (v[2] == "" ? m : v[2] + 0)
      s = (m > 0 ? log(p / m) / 2.3263478740408408 : 0)
      printf "%.0f\n", m * exp(s * s / 2)
    }
  }'
}

# --- 1. dispatch rate --------------------------------------------------------
# Administrator objects of the dispatch part; $1: the queue's stop_policy.
# One flavor over the four regions and one cluster queue, each job naming
# its region (`locations`): releasing the queue is one change, so one
# admission cycle admits every job (a queue per region, released one by
# one by `gpugate apply`, admitted each region's jobs a cycle later than
# the one before, 0.2-0.7 s apart on a busy machine, and that showed in
# the dispatch rate).
dispatch_objects() {
  local regions_json
  regions_json="$(printf '"%s",' "${REGIONS[@]}")"
  echo '{"priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},'
  printf ' "flavors": {"cpu-4": {"provisioning_model": "STANDARD", "machine_type": "n2-standard-4", "gpus_per_vm": 0, "locations": [%s]}},\n' \
    "${regions_json%,}"
  printf ' "cluster_queues": {"cq-dispatch": {"stop_policy": "%s", "flavors": [{"name": "cpu-4", "resources": {"cpu_milli": {"nominal": 1000000000}, "memory_mib": {"nominal": 1000000000}}}]}},\n' \
    "$1"
  echo ' "teams": {"disp": {"display_name": "Dispatch bench", "cost_center": "bench"}},'
  echo ' "team_queues": {"disp": {"dispatch": {"cluster_queue": "cq-dispatch"}}}}'
}

if [[ -z "${KUEUE_SKIP_DISPATCH:-}" ]]; then
  dispatch_objects Hold >"$T/dispatch.json"
  dispatch_objects None >"$T/dispatch-release.json"
  EMU_PROJECT="$PROJECT" EMU_RUN_MS=3600000 start_stack dispatch
  bench_log "dispatch: $DISPATCH_JOBS jobs over ${#REGIONS[@]} regions"
  DRV_TOKEN="$(bench_token disp member)" DRV_QUEUES=dispatch DRV_REGIONS="$(
    IFS=,
    echo "${REGIONS[*]}"
  )" DRV_CONCURRENCY=32 "$BIN/bench_driver" burst "$GG_URL" disp "$DISPATCH_JOBS" \
    >"$T/dispatch.out"
  ok="$(awk -F= '$1 == "ok" {print $2}' "$T/dispatch.out")"
  [[ "$ok" == "$DISPATCH_JOBS" ]] ||
    bench_log "dispatch: only $ok of $DISPATCH_JOBS submits succeeded"
  # every job is pending behind a held queue: release them all at once
  "$BIN/gpugate" apply "$T/dispatch-release.json" >/dev/null
  for ((i = 0; i < 1200; i++)); do
    n="$("${PSQL[@]}" -c "SELECT count(*) FROM jobs WHERE batch_job_name IS NOT NULL")"
    ((n >= ok)) && break
    sleep 0.25
  done
  creates_tsv >"$T/creates.tsv"
  n429="$(curl -fsS "$EMU_URL/emulator/requests" | jq '[.requests[] | select(.status == 429)] | length')"
  a2c="$(bench_admission_to_create)"
  inflight="$(curl -fsS "$EMU_URL/emulator/healthz" | jq -r '.maxInFlight.create')"
  bench_log "dispatch: at most $inflight creates under way at once (emulator)"
  # the leader reconciled its in-memory state every 10 s of the run
  drift="$(curl -fsS "$GG_URL/metrics" | awk '$1 == "gpugate_admission_state_drift_total" { print $2 }')"
  reconciled="$(grep -c 'admission state drift repaired' "$T/gpugate.log" || true)"
  stop_stack
  # per region: creates, mean rate from first to last, busiest 1 s window
  awk -F'\t' '$2 == 200 { t[$1, ++n[$1]] = $3 }
    END {
      for (r in n) {
        m = n[r]; best = 0; j = 1
        for (i = 1; i <= m; i++) {
          while (t[r, i] - t[r, j] >= 1.0) j++
          if (i - j + 1 > best) best = i - j + 1
        }
        span = t[r, m] - t[r, 1]
        printf "%s %d %.1f %d\n", r, m, (span > 0 ? (m - 1) / span : 0), best
      }
    }' <(sort -t$'\t' -k3,3n "$T/creates.tsv") | sort >"$T/dispatch.rates"
  # the whole dispatch: first create of any region to the last of any
  read -r total_creates span_all < <(awk -F'\t' '$2 == 200 {
      if (!n++ || $3 < lo) lo = $3
      if ($3 > hi) hi = $3
    } END { printf "%d %.3f\n", n, hi - lo }' "$T/creates.tsv")
  # per region: its creates over the whole dispatch (the rate the regions
  # get together), and while it had creates (first to last of its own)
  while read -r region count rate window; do
    rate_region="$(bench_calc "$count / $span_all")"
    met=NO
    bench_true "$rate_region >= 95" && met=yes
    add_row "dispatch $region ($count creates)" "$(bench_calc "$rate_region / 1")/s; $rate/s active" \
      "quota 100/s; busiest 1 s: $window" "$(bench_calc "$rate_region / 100")" ">= 0.95" "$met"
  done <"$T/dispatch.rates"
  rate_all="$(bench_calc "($total_creates - 1) / $span_all")"
  met=NO
  bench_true "$rate_all >= 95 * ${#REGIONS[@]}" && met=yes
  add_row "dispatch, all ${#REGIONS[@]} regions together" "$rate_all creates/s" \
    "quota ${#REGIONS[@]} x 100/s" "$(bench_calc "$rate_all / (100 * ${#REGIONS[@]})")" ">= 0.95" "$met"
  met=NO
  ((n429 == 0)) && met=yes
  add_row "dispatch: 429s from the emulator" "$n429" "$total_creates creates, 4 regions" "-" "0" "$met"
  add_row "dispatch: admission → create p50/p99" "$(awk '{printf "%.2f / %.2f s", $1, $2}' <<<"$a2c")" \
    "all admitted at once: the budget's queue" "-" "-" "-"
fi

# --- 2. Kueue baseline shape -------------------------------------------------
# The Kueue baseline shape in database $1; $2 = 1 sets usage_fair_sharing
# (fair share over time, half-life 60 s, CPU weighted) on every cluster
# queue, so that the borrowers of each cohort are ranked by decayed usage.
kueue_shape() {
  local db="$1" fs="$2" fs_json="" label=""
  if ((fs)); then
    fs_json=', "usage_fair_sharing": {"half_life_s": 60, "resource_weights": {"gpu": 0, "cpu": 1, "memory": 0}}'
    label=", usage fair sharing on"
  fi
  regions_json="$(printf '"%s",' "${REGIONS[@]}")"
  {
    echo '{"priority_classes": {'
    echo '  "small": {"value": 50, "preemption_policy": "PreemptLowerPriority"},'
    echo '  "medium": {"value": 100, "preemption_policy": "PreemptLowerPriority"},'
    echo '  "large": {"value": 200, "preemption_policy": "PreemptLowerPriority"}},'
    echo " \"flavors\": {\"cpu\": {\"provisioning_model\": \"STANDARD\", \"machine_type\": \"n2-standard-32\", \"gpus_per_vm\": 0, \"locations\": [${regions_json%,}]}},"
    echo ' "cohorts": {'
    for c in 0 1 2 3 4; do
      ((c)) && echo ','
      printf '"cohort-%d": {}' "$c"
    done
    echo '}, "cluster_queues": {'
    for c in 0 1 2 3 4; do
      for q in 0 1 2 3 4 5; do
        ((c + q)) && echo ','
        printf '"c%d-q%d": {"cohort": "cohort-%d", "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any"}, "flavors": [{"name": "cpu", "resources": {"cpu_milli": {"nominal": 20000, "borrowing_limit": 100000}, "memory_mib": {"nominal": 1000000000}}}]%s}' \
          "$c" "$q" "$c" "$fs_json"
      done
    done
    echo '}, "teams": {"kueue": {"display_name": "Kueue shape", "cost_center": "bench"}},'
    echo ' "team_queues": {"kueue": {'
    for c in 0 1 2 3 4; do
      for q in 0 1 2 3 4 5; do
        ((c + q)) && echo ','
        printf '"c%d-q%d": {"cluster_queue": "c%d-q%d"}' "$c" "$q" "$c" "$q"
      done
    done
    echo '}}}'
  } >"$T/$db.json"
  GPUGATE_ADMISSION_RECONCILE_S=10 EMU_PROJECT="$PROJECT" EMU_START_MS=0 \
    EMU_CANCEL_MS=0 EMU_DELETE_MS=0 start_stack "$db"
  bench_log "Kueue baseline$label: 15,000 jobs, arrivals over $(bench_calc "60 * $SCALE") s (scale $SCALE)"
  DRV_TOKEN="$(bench_token kueue member)" DRV_SCALE="$SCALE" DRV_REGIONS="$(
    IFS=,
    echo "${REGIONS[*]}"
  )" DRV_HOLD_MS="$(mean_create_ms)" DRV_CONCURRENCY=32 \
    "$BIN/bench_driver" kueue "$GG_URL" kueue >"$T/$db.out" &
  DRV_PID=$!
  BENCH_PIDS+=("$DRV_PID")
  start_s=$EPOCHSECONDS
  last_report=0
  # done when the driver has finished and no job is active. One psql
  # serves the whole wait: a psql (and its backend) started every second
  # took ~2 % of the machine in the busiest phase (perf -a, 2026-11-27),
  # CPU the run itself was short of. Each second asks only whether a job
  # is active; the counts are for the report every 15 s.
  coproc POLL { "${PSQL[@]}" 2>&1; }
  ask() {
    printf '%s\n' "$1" >&"${POLL[1]}"
    IFS= read -r -t 60 REPLY <&"${POLL[0]}" || REPLY="?"
  }
  while :; do
    driving=0
    kill -0 "$DRV_PID" 2>/dev/null && driving=1
    ask "SELECT EXISTS (SELECT 1 FROM jobs WHERE state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING'));"
    busy="$REPLY"
    now_s=$EPOCHSECONDS
    if ((now_s - last_report >= 15)); then
      ask "SELECT count(*) || ' submitted, ' || count(*) FILTER (WHERE state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')) || ' active' FROM jobs;"
      bench_log "  $((now_s - start_s)) s: $REPLY"
      last_report=$now_s
    fi
    ((driving == 0)) && [[ "$busy" == f ]] && break
    if ((now_s - start_s > TIMEOUT_S)); then
      bench_log "Kueue baseline: gave up waiting after $TIMEOUT_S s (jobs still active)"
      break
    fi
    sleep 1
  done
  eval "exec ${POLL[1]}>&-" # psql sees the end of its input and exits
  wait "$POLL_PID" 2>/dev/null || true
  wait "$DRV_PID" || true
  first="$(awk -F= '$1 == "first_submit_unix" {print $2}' "$T/$db.out")"
  floor="$(awk -F= '$1 == "floor_s" {print $2}' "$T/$db.out")"
  kok="$(awk -F= '$1 == "ok" {print $2}' "$T/$db.out")"
  late50="$(awk -F= '$1 == "late_p50_ms" {print $2}' "$T/$db.out")"
  late99="$(awk -F= '$1 == "late_p99_ms" {print $2}' "$T/$db.out")"
  read -r succeeded finished last evictions < <("${PSQL[@]}" -F ' ' -c "
    SELECT count(*) FILTER (WHERE state = 'SUCCEEDED'),
           count(*) FILTER (WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')),
           extract(epoch FROM max(finished_at)),
           (SELECT count(*) FROM job_events WHERE to_state = 'EVICTING')
    FROM jobs")
  dup="$(curl -fsS "$EMU_URL/emulator/jobs" | jq '[.creates | to_entries[] | select(.value > 1)] | length' || echo '?')"
  a2c="$(bench_admission_to_create)"
  n429="$(curl -fsS "$EMU_URL/emulator/requests" | jq '[.requests[] | select(.status == 429)] | length')"
  # the leader reconciled its in-memory state every 10 s of the run
  drift="$(curl -fsS "$GG_URL/metrics" | awk '$1 == "gpugate_admission_state_drift_total" { print $2 }')"
  reconciled="$(grep -c 'admission state drift repaired' "$T/gpugate.log" || true)"
  bench_log "Kueue baseline: at most $(curl -fsS "$EMU_URL/emulator/healthz" | jq -r '.maxInFlight.create') creates under way at once (emulator)"
  stop_stack
  wall="$(bench_calc "$last - $first")"
  ratio="$(bench_calc "$wall / $floor")"
  met=NO
  goal=1.6 # issue 10; issue 22: 1.8 with a real Batch's latency
  [[ -n "$BENCH_LATENCY" ]] && goal=1.8
  ((finished == 15000)) && bench_true "$wall / $floor <= $goal" && met=yes
  what="Kueue baseline, 15,000 jobs$label"
  ((finished == 15000)) || what="Kueue baseline: $finished of 15,000 done"
  [[ "$SCALE" == 1 ]] || what="$what, x$SCALE"
  add_row "$what" "$(bench_calc "$wall / 1") s wall" \
    "floor $(bench_calc "$floor / 1") s; Kueue CI ~351 s = 5.3x" "$ratio" "<= $goal" "$met"
  floor_hold="$(awk -F= '$1 == "floor_hold_s" {print $2}' "$T/$db.out")"
  if [[ -n "$floor_hold" ]]; then
    add_row "  floor if each job held its quota through a mean create ($(mean_create_ms) ms)" \
      "$(bench_calc "$floor_hold / 1") s" "reference: a job holds its quota from admission" \
      "$(bench_calc "$wall / $floor_hold")" "-" "-"
  fi
  add_row "  submit lag behind arrivals, p50/p99" \
    "$(bench_calc "$late50 / 1000") / $(bench_calc "$late99 / 1000") s" \
    "$kok submitted, arrivals over $(bench_calc "60 * $SCALE / 1") s" "-" "-" "-"
  add_row "  succeeded / preemptions" "$succeeded / $evictions" "-" "-" "-" "-"
  add_row "  admission → create p50/p99" "$(awk '{printf "%.2f / %.2f s", $1, $2}' <<<"$a2c")" \
    "$(awk '{print $3}' <<<"$a2c") creates" "-" "-" "-"
  add_row "  429s / jobs created twice" "$n429 / $dup" "-" "-" "0 / 0" \
    "$( ((n429 == 0)) && [[ "$dup" == 0 ]] && echo yes || echo NO)"
  add_row "  admission state drift (reconciled/10 s)" "${drift:-?}" \
    "$reconciled drifted jobs logged" "-" "0" \
    "$([[ "${drift:-}" == 0 ]] && echo yes || echo NO)"
}

if [[ -z "${KUEUE_SKIP_SHAPE:-}" ]]; then
  kueue_shape kueue 0
  [[ -n "${KUEUE_SKIP_FAIR_SHARE:-}" ]] || kueue_shape kueuefs 1
fi

bench_log "done; machine: $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -r)"
echo
echo "bench/kueue.sh: gpugate + Batch emulator, 4 regions; Batch latency $(bench_latency_label) (${BENCH_LATENCY:-none}); $(nproc) cores"
bench_header
printf '%s\n' "${rows[@]}"
