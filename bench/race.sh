#!/usr/bin/env bash
# bench/race.sh — gpugate's Batch footprint through the Batch emulator
# (tests/emulator); `make bench` runs it; it prints figures and asserts
# nothing.
#
# 1. Flex Start across regions: sequential failover vs race. Two flavors
#    over the same three regions (us-central1, us-east4, europe-west4), both
#    FLEX_START with max_wait_s = RACE_MAX_WAIT_S (4): "fo" fails over
#    region by region, "race" waits in all three at once (each copy
#    max_wait_s, then the job backs off). Each of RACE_TRIALS (8) trials
#    starts with no Flex Start capacity anywhere, submits one job to each
#    flavor at the same moment, and after a random wait (0 to 0.9 ×
#    max_wait_s, so that neither gives up first) makes capacity appear in a
#    random one of the three regions; the figure is the time from submit
#    to RUNNING (seen through GET /v1/…/jobs/{id}, so up to a sync period
#    late), capped at RACE_CAP_S (20 s). Failover reaches region k only
#    after (k - 1) × max_wait_s. Same run, same arrivals, same capacity for
#    both; the seed is printed (RACE_SEED repeats a run).
#
# 2. Three replicas, one budget. DISPATCH_JOBS (3,000) jobs round-robin
#    over four regions, dispatched by three gpugate replicas that share
#    the deployment's budget (98/s per region after a burst of 30). From
#    the emulator's request log: per region, creates per second from the
#    end of the burst to the last, the most in any 1-s and 60-s window (Batch's
#    quota: 6,000, which the emulator enforces, so a breach would show as
#    429s) and the number of 429s.
#
# The emulator answers with a real Batch's latency (bench/lib.sh;
# BENCH_BATCH_LATENCY=0 for none).
#
# Usage: make build/gpugate build/batch_emulator && bench/race.sh
set -euo pipefail

BENCH_NAME=bench/race.sh
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TRIALS="${RACE_TRIALS:-8}"
MAX_WAIT="${RACE_MAX_WAIT_S:-4}"
CAP_S="${RACE_CAP_S:-20}"
SEED="${RACE_SEED:-$RANDOM}"
DISPATCH_JOBS="${DISPATCH_JOBS:-3000}"
PROJECT=bench-project
RACE_REGIONS=(us-central1 us-east4 europe-west4)
BUDGET_REGIONS=(us-central1 us-east4 europe-west4 asia-east1)
NO_CAP="us-central1/FLEX_START=0,us-east4/FLEX_START=0,europe-west4/FLEX_START=0"

bench_setup build/batch_emulator

flavor() { # name mode locations-json
  printf '"%s": {"provisioning_model": "FLEX_START", "machine_type": "g2-standard-24", "accelerator_type": "nvidia-l4", "gpus_per_vm": 2, "locations": %s, "price_per_gpu_hour_usd": 0.35, "max_wait_s": %d, "multi_region": "%s"}' \
    "$1" "$3" "$MAX_WAIT" "$2"
}

start_stack() { # db, then the replicas
  local db="$1" replicas="$2" i
  tests/pg.sh createdb "$T/pg" "$db"
  export GPUGATE_DATABASE_URL="${PGURI%/*}/$db"
  "$BIN/gpugate" migrate >/dev/null
  "$BIN/gpugate" apply "$T/$db.json" >/dev/null
  bench_start_emulator
  export GPUGATE_BATCH_BACKEND=gcp GPUGATE_GCP_PROJECT="$PROJECT" \
    GPUGATE_BATCH_ENDPOINT="$EMU_URL" GCE_METADATA_HOST="${EMU_URL#http://}" \
    GPUGATE_SYNC_INTERVAL_MS=500 GPUGATE_ADMISSION_INTERVAL_MS=200
  GG_URLS=()
  for ((i = 0; i < replicas; i++)); do
    bench_start_gpugate
    GG_URLS+=("$GG_URL")
  done
}

stop_stack() {
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${BENCH_PIDS[i]}" 2>/dev/null || true
    wait "${BENCH_PIDS[i]}" 2>/dev/null || true
  done
  BENCH_PIDS=()
}

emu_config() {
  curl -fsS -X POST "$EMU_URL/emulator/config" -H 'Content-Type: application/json' \
    -d "$1" >/dev/null || bench_die "cannot configure the emulator"
}

submit() { # queue name → job id
  curl -fsS -X POST "$GG_URL/v1/teams/bench/jobs" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d "{\"name\": \"$2\", \"queue\": \"$1\", \"task_count\": 1, \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}" |
    jq -r .id
}

state_of() {
  curl -fsS "$GG_URL/v1/teams/bench/jobs/$1" -H "Authorization: Bearer $TOKEN" | jq -r .state
}

cancel() {
  curl -fsS -X POST "$GG_URL/v1/teams/bench/jobs/$1/cancel" \
    -H "Authorization: Bearer $TOKEN" >/dev/null || true
}

now_ms() { date +%s%3N; }

# ---- 1. failover vs race -------------------------------------------------

regions_json='["us-central1", "us-east4", "europe-west4"]'
{
  echo '{"priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},'
  echo " \"flavors\": {$(flavor fo failover "$regions_json"), $(flavor race race "$regions_json")},"
  echo ' "cluster_queues": {'
  echo '  "cq-fo": {"flavors": [{"name": "fo", "resources": {"gpu": {"nominal": 64}, "cpu_milli": {"nominal": 64000}, "memory_mib": {"nominal": 65536}}}]},'
  echo '  "cq-race": {"flavors": [{"name": "race", "resources": {"gpu": {"nominal": 64}, "cpu_milli": {"nominal": 64000}, "memory_mib": {"nominal": 65536}}}]}},'
  echo ' "teams": {"bench": {"display_name": "Bench", "cost_center": "bench"}},'
  echo ' "team_queues": {"bench": {"fo": {"cluster_queue": "cq-fo"}, "race": {"cluster_queue": "cq-race"}}}}'
} >"$T/race.json"
EMU_PROJECT="$PROJECT" EMU_START_MS=100 EMU_CANCEL_MS=100 EMU_FLEX_WAIT_MS=100 \
  EMU_RUN_MS=600000 EMU_CAPACITY="$NO_CAP" start_stack race 1
TOKEN="$(bench_token bench member)"
bench_log "failover vs race: $TRIALS trials, max_wait_s $MAX_WAIT, seed $SEED"
RANDOM="$SEED"
fo_times=() race_times=()
for ((t = 0; t < TRIALS; t++)); do
  emu_config "{\"EMU_CAPACITY\": \"$NO_CAP\"}"
  wait_ms=$((RANDOM % (MAX_WAIT * 900 + 1)))
  region=${RACE_REGIONS[RANDOM % 3]}
  t0=$(now_ms)
  fo=$(submit fo "fo-$t")
  rc=$(submit race "race-$t")
  fo_ms="" race_ms="" opened=0
  while :; do
    now=$(now_ms)
    if ((!opened && now - t0 >= wait_ms)); then
      cap="${NO_CAP/$region\/FLEX_START=0/$region/FLEX_START=64}"
      emu_config "{\"EMU_CAPACITY\": \"$cap\"}"
      opened=1
    fi
    [[ -z "$fo_ms" && "$(state_of "$fo")" == RUNNING ]] && fo_ms=$((now - t0))
    [[ -z "$race_ms" && "$(state_of "$rc")" == RUNNING ]] && race_ms=$((now - t0))
    [[ -n "$fo_ms" && -n "$race_ms" ]] && break
    ((now - t0 < CAP_S * 1000)) || break
    sleep 0.1
  done
  fo_ms="${fo_ms:-$((CAP_S * 1000))}" race_ms="${race_ms:-$((CAP_S * 1000))}"
  bench_log "  trial $t: capacity in $region after $wait_ms ms: failover $fo_ms ms, race $race_ms ms"
  fo_times+=("$fo_ms") race_times+=("$race_ms")
  cancel "$fo"
  cancel "$rc"
  sleep 1
done
race_overlap="$(curl -fsS "$GG_URL/metrics" |
  awk '/^gpugate_batch_race_overlap_seconds_total/ {s += $2} END {print s + 0}')"
stop_stack

stats() { # values… → "mean p50 max" in s
  printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1; s += $1}
    END {printf "%.2f %.2f %.2f", s / NR / 1000, v[int((NR + 1) / 2)] / 1000, v[NR] / 1000}'
}
read -r fo_mean fo_p50 fo_max <<<"$(stats "${fo_times[@]}")"
read -r race_mean race_p50 race_max <<<"$(stats "${race_times[@]}")"

# ---- 2. three replicas, one budget -----------------------------------------

budget_config() {
  echo '{"priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},'
  echo ' "flavors": {'
  for ((i = 0; i < 4; i++)); do
    ((i)) && echo ','
    printf '"b%d": {"provisioning_model": "STANDARD", "machine_type": "n2-standard-32", "gpus_per_vm": 0, "locations": ["%s"]}' "$i" "${BUDGET_REGIONS[i]}"
  done
  echo '}, "cluster_queues": {'
  for ((i = 0; i < 4; i++)); do
    ((i)) && echo ','
    printf '"cq-b%d": {"stop_policy": "%s", "flavors": [{"name": "b%d", "resources": {"cpu_milli": {"nominal": 100000000}, "memory_mib": {"nominal": 100000000}}}]}' "$i" "$STOP" "$i"
  done
  echo '}, "teams": {"bench": {"display_name": "Bench", "cost_center": "bench"}},'
  echo ' "team_queues": {"bench": {'
  for ((i = 0; i < 4; i++)); do
    ((i)) && echo ','
    printf '"q%d": {"cluster_queue": "cq-b%d"}' "$i" "$i"
  done
  echo '}}}'
}
# the queues are held while the jobs arrive, then released at once, so the
# dispatch runs at the budget rather than at the submission rate
STOP=Hold budget_config >"$T/budget.json"
STOP=None budget_config >"$T/budget-go.json"
EMU_PROJECT="$PROJECT" EMU_START_MS=0 EMU_RUN_MS=3600000 start_stack budget 3
TOKEN="$(bench_token bench member)"
bench_log "three replicas: $DISPATCH_JOBS jobs over ${#BUDGET_REGIONS[@]} regions"
for ((i = 0; i < DISPATCH_JOBS; i++)); do
  curl -fsS -X POST "${GG_URLS[i % 3]}/v1/teams/bench/jobs" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d "{\"name\": \"b-$i\", \"queue\": \"q$((i % 4))\", \"task_count\": 1, \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 1000, \"memory_mib\": 1024}}" \
    >/dev/null
done
"$BIN/gpugate" apply "$T/budget-go.json" >/dev/null
deadline=$(($(date +%s) + 300))
while :; do
  n="$(curl -fsS "$EMU_URL/emulator/jobs" | jq '.creates | length')"
  ((n >= DISPATCH_JOBS || $(date +%s) > deadline)) && break
  sleep 1
done
curl -fsS "$EMU_URL/emulator/requests" |
  jq -r '.requests[] | select((.method == "POST" or .method == "DELETE") and (.path | test("/locations/[^/]+/jobs"))) |
    "\(.path | capture("/locations/(?<r>[^/]+)/").r)\t\(.status)\t\(.atMs)"' >"$T/mutations.tsv"
stop_stack

echo
echo "bench/race.sh: Batch latency $(bench_latency_label) (${BENCH_LATENCY:-none}); $(nproc) cores"
bench_header
bench_row "submit→RUNNING, failover: mean/p50/max" "$fo_mean / $fo_p50 / $fo_max s" \
  "$TRIALS trials, seed $SEED, cap ${CAP_S} s" "-" "-" "-"
bench_row "submit→RUNNING, race: mean/p50/max" "$race_mean / $race_p50 / $race_max s" \
  "same arrivals and capacity" "$(bench_calc "$race_mean / $fo_mean")" "< 1" \
  "$(bench_true "$race_mean < $fo_mean" && echo yes || echo NO)"
bench_row "race: overlapping copies" "$race_overlap s" "-" "-" "0" \
  "$(bench_true "$race_overlap == 0" && echo yes || echo NO)"
for r in "${BUDGET_REGIONS[@]}"; do
  refused="$(awk -F'\t' -v r="$r" '$1 == r && $2 == 429 {n++} END {print n + 0}' "$T/mutations.tsv")"
  read -r ok rate most1 most60 <<<"$(awk -F'\t' -v r="$r" '$1 == r && $2 != 429 && $2 < 300 {print $3}' "$T/mutations.tsv" |
    sort -n | awk '{t[NR] = $1}
      END {
        if (NR < 2) { print NR + 0, 0, NR + 0, NR + 0; exit }
        lo = 1; l1 = 1; m1 = 0; m60 = 0
        for (i = 1; i <= NR; i++) {
          while (t[i] - t[lo] >= 60000) lo++
          while (t[i] - t[l1] >= 1000) l1++
          if (i - lo + 1 > m60) m60 = i - lo + 1
          if (i - l1 + 1 > m1) m1 = i - l1 + 1
        }
        # the rate after the burst: the bucket holds 30 at the first
        # mutation and refills at 98/s from then on, so the mutations
        # past the first 30 over the whole span (counted from the 31st
        # mutation, the tokens refilled while the burst went out made
        # the rate look higher than the bucket allows: 100.2/s in a run)
        b = NR > 60 ? 30 : 0
        printf "%d %.1f %d %d\n", NR, (NR - b) * 1000 / (t[NR] - t[1]), m1, m60
      }')"
  bench_row "3 replicas, $r: mutations/s after the burst" "$rate/s ($ok, $refused × 429)" \
    "Batch quota 100/s" "$(bench_calc "$rate / 100")" "≤ 1, 0×429" \
    "$(bench_true "$rate <= 100 && $refused == 0" && echo yes || echo NO)"
  bench_row "3 replicas, $r: most in 1 s / 60 s" "$most1 / $most60" "burst 30 + 98 / 6,000" \
    "$(bench_calc "$most60 / 6000")" "≤ 1" "$(bench_true "$most60 <= 6000" && echo yes || echo NO)"
done
