#!/usr/bin/env bash
# bench/faults.sh — cancels and preemptions under a Batch that refuses or
# loses answers (issue 34); `make bench` runs it; it prints figures and
# asserts nothing.
#
# The emulator answers with a real Batch's latency (bench/lib.sh, create
# 300 ms) and refuses or loses FAULT_RATE (10 %) of its mutations (create,
# :cancel, DELETE): half of them refused (400, 429, 500 or 503), half lost
# after the effect (the create made, the answer a 503 or a dropped
# connection), and it acts on an accepted :cancel FAULT_CANCEL_LAG_MS (500)
# later. FAULT_JOBS (200) low-priority jobs of 1 GPU fill a cluster queue
# of as many GPUs and run; then half of them are cancelled by their users
# and FAULT_JOBS urgent jobs arrive, all at once: as many as the queue
# holds, so that the other half is preempted whatever the cancels free
# first (with only half as many, the cancels' quota was enough and
# nothing was preempted). The
# figures: each cancel from the API's 200 to CANCELLED, each eviction from
# the urgent jobs' arrival to the victim's requeue (its Requeued event),
# both as seen through the API (up to a sync period late), each counted
# against what it should be: the cancels answered 200 with the job not
# ended (every call's HTTP status and reply is kept, not lost to curl -f),
# the jobs preempted (an EVICTING event). A job whose create Batch refused
# for good is FAILED before the cancels: its cancel is answered 200 with
# the job as it is (idempotent), and it is not preempted; an urgent
# job FAILED that way leaves its quota to a low job, which is then not
# preempted either. Counting every CANCELLED and every Requeued against
# half of FAULT_JOBS each missed those jobs. Then, after quiet
# (the faults stopped, FAULT_QUIET_S at most) the Batch jobs still live for
# a job that is CANCELLED, FAILED, SUCCEEDED or PENDING.
#
# Usage: make build/gpugate build/batch_emulator && bench/faults.sh
set -euo pipefail

BENCH_NAME=bench/faults.sh
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

JOBS="${FAULT_JOBS:-200}"
RATE="${FAULT_RATE:-0.10}"
LAG_MS="${FAULT_CANCEL_LAG_MS:-500}"
QUIET_S="${FAULT_QUIET_S:-120}"
PROJECT=bench-project

bench_setup build/batch_emulator

{
  echo '{"priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true},'
  echo '  "urgent": {"value": 20, "preemption_policy": "PreemptLowerPriority", "default": false}},'
  echo ' "flavors": {"l4": {"provisioning_model": "STANDARD", "machine_type": "g2-standard-24", "accelerator_type": "nvidia-l4", "gpus_per_vm": 2, "locations": ["us-central1"], "price_per_gpu_hour_usd": 0.71}},'
  echo " \"cluster_queues\": {\"cq\": {\"preemption\": {\"within_cluster_queue\": \"LowerPriority\"}, \"flavors\": [{\"name\": \"l4\", \"resources\": {\"gpu\": {\"nominal\": $JOBS}, \"cpu_milli\": {\"nominal\": $((JOBS * 1000))}, \"memory_mib\": {\"nominal\": $((JOBS * 1024))}}}]}},"
  echo ' "teams": {"bench": {"display_name": "Bench", "cost_center": "bench"}},'
  echo ' "team_queues": {"bench": {"q": {"cluster_queue": "cq"}}}}'
} >"$T/faults.json"

tests/pg.sh createdb "$T/pg" faults
export GPUGATE_DATABASE_URL="${PGURI%/*}/faults"
PSQL=(psql -XAtq "$GPUGATE_DATABASE_URL")
"$BIN/gpugate" migrate >/dev/null
"$BIN/gpugate" apply "$T/faults.json" >/dev/null
EMU_PROJECT="$PROJECT" EMU_START_MS=100 EMU_CANCEL_MS=100 EMU_RUN_MS=3600000 \
  EMU_CANCEL_LAG_MS="$LAG_MS" bench_start_emulator
export GPUGATE_BATCH_BACKEND=gcp GPUGATE_GCP_PROJECT="$PROJECT" \
  GPUGATE_BATCH_ENDPOINT="$EMU_URL" GCE_METADATA_HOST="${EMU_URL#http://}" \
  GPUGATE_SYNC_INTERVAL_MS=1000 GPUGATE_ADMISSION_INTERVAL_MS=200 \
  GPUGATE_RATE_LIMIT_RPS=100000
bench_start_gpugate
TOKEN="$(bench_token bench member)"

faults() {
  curl -fsS -X POST "$EMU_URL/emulator/faults" -H 'Content-Type: application/json' \
    -d "$1" >/dev/null || bench_die "cannot set the emulator's faults"
}

submit() { # class name → job id
  curl -fsS -X POST "$GG_URL/v1/teams/bench/jobs" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d "{\"name\": \"$2\", \"queue\": \"q\", \"priority_class\": \"$1\", \"task_count\": 1, \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}" |
    jq -r .id
}

count() { "${PSQL[@]}" -c "$1"; }

half="$(bench_calc "$RATE / 2")"
faults "{\"error_rate\": $half, \"codes\": [400, 429, 500, 503], \"lost_response_rate\": $half, \"lost_response_mode\": \"503\", \"calls\": [\"create\", \"cancel\", \"delete\"]}"
bench_log "$JOBS jobs, $(bench_calc "$RATE * 100") % of mutations refused or lost, cancel lag $LAG_MS ms"
ids=()
for ((i = 0; i < JOBS; i++)); do ids+=("$(submit default "low-$i")"); done
deadline=$(($(date +%s) + 300))
# every job running, or refused for good (a 400 to its create: FAILED)
while (($(count "SELECT count(*) FROM jobs WHERE state IN ('PENDING', 'ADMITTED', 'QUEUED')") > 0)); do
  (($(date +%s) < deadline)) || bench_die "the jobs did not all run"
  sleep 1
done

# What each figure should count: a job whose create Batch refused for
# good is FAILED before anything is asked of it (about RATE / 8 of the
# creates), so its cancel is answered 200 with the job as it is (a cancel
# is idempotent: the reply's state is FAILED) and it is not preempted; the
# cancels counted are those answered 200 with the job not ended, the
# evictions those of the second half's jobs still running when the urgent
# jobs arrive.
failed_first="$(count "SELECT count(*) FROM jobs WHERE state = 'FAILED'")"
to_cancel=$(printf "'%s'," "${ids[@]:0:JOBS/2}")
to_evict=$(printf "'%s'," "${ids[@]:JOBS/2}")
evictable="$(count "SELECT count(*) FROM jobs WHERE id IN (${to_evict%,}) AND state IN ('QUEUED', 'RUNNING')")"

# half cancelled, half preempted, at once; each call's HTTP status kept
# (a failed call is counted, not lost to curl -f)
t0="$(date +%s.%N)"
calls=()
for ((i = 0; i < JOBS / 2; i++)); do
  curl -sS -o "$T/cancelled.$i" -w '%{http_code}\n' -X POST \
    "$GG_URL/v1/teams/bench/jobs/${ids[i]}/cancel" \
    -H "Authorization: Bearer $TOKEN" >"$T/cancel.$i" &
  calls+=($!)
done
for ((i = 0; i < JOBS; i++)); do
  curl -sS -o /dev/null -w '%{http_code}\n' -X POST "$GG_URL/v1/teams/bench/jobs" \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"name\": \"high-$i\", \"queue\": \"q\", \"priority_class\": \"urgent\", \"task_count\": 1, \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}" \
    >"$T/urgent.$i" &
  calls+=($!)
done
wait "${calls[@]}" || true # not the emulator nor gpugate
cancels_200="$(cat "$T"/cancel.* | grep -c '^200$' || true)"
cancels_409="$(cat "$T"/cancel.* | grep -c '^409$' || true)"
# answered 200 with the job already ended (FAILED before the cancel)
cancels_ended="$(for ((i = 0; i < JOBS / 2; i++)); do
  [[ "$(cat "$T/cancel.$i")" == 200 ]] && jq -r .state "$T/cancelled.$i"
done | grep -c '^\(FAILED\|SUCCEEDED\)$' || true)"
cancels_ok=$((cancels_200 - cancels_ended))
urgent_ok="$(cat "$T"/urgent.* | grep -c '^201$' || true)"
bench_log "cancels: $cancels_200 answered 200 ($cancels_ended of them with the job already ended), $cancels_409 answered 409, $((JOBS / 2 - cancels_200 - cancels_409)) otherwise; urgent submits: $urgent_ok of $JOBS answered 201; low jobs FAILED before (create refused for good): $failed_first; of the second half, $evictable running"
deadline=$(($(date +%s) + QUIET_S))
while (($(count "SELECT count(*) FROM jobs WHERE state = 'EVICTING' OR (cancel_requested AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))") > 0)); do
  (($(date +%s) < deadline)) || break
  sleep 1
done
# what was injected (setting the faults again clears the counts)
stats="$(curl -fsS "$EMU_URL/emulator/faults" | jq -r '.injected | "\(.error) refused, \(.lost_response) lost"')"
faults '{}'
sleep 3
# from the cancel (or the urgent jobs' arrival) to CANCELLED or Requeued
read -r c50 cmax cn <<<"$(count "SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1), 0), coalesce(round(max(d)::numeric, 1), 0), count(*) FROM (SELECT extract(epoch FROM e.at) - $t0 AS d FROM job_events e WHERE e.to_state = 'CANCELLED' AND e.job_id IN (${to_cancel%,})) x" | tr '|' ' ')"
read -r e50 emax en <<<"$(count "SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1), 0), coalesce(round(max(d)::numeric, 1), 0), count(*) FROM (SELECT extract(epoch FROM e.at) - $t0 AS d FROM job_events e WHERE e.reason = 'Requeued') x" | tr '|' ' ')"
# every preemption must finish: the jobs preempted (an EVICTING event
# since t0, not cancelled) against those requeued; a running job of the
# second half is not preempted when an urgent job's create was refused
# for good (FAILED) and left its quota to it
preempted="$(count "SELECT count(DISTINCT job_id) FROM job_events WHERE to_state = 'EVICTING' AND job_id IN (${to_evict%,}) AND extract(epoch FROM at) >= $t0")"
requeued="$(count "SELECT count(DISTINCT e.job_id) FROM job_events e WHERE e.reason = 'Requeued' AND e.job_id IN (SELECT job_id FROM job_events WHERE to_state = 'EVICTING' AND job_id IN (${to_evict%,}) AND extract(epoch FROM at) >= $t0)")"
urgent_failed="$(count "SELECT count(*) FROM jobs WHERE name LIKE 'high-%' AND state = 'FAILED'")"
bench_log "uncounted: cancels answered 200 without a CANCELLED event: $((cancels_ok - cn)); preempted $preempted of the second half's $evictable running (urgent jobs FAILED: $urgent_failed), requeued $requeued of them; the low jobs now: $(count "SELECT string_agg(s, ', ') FROM (SELECT state || ' ' || count(*) AS s FROM jobs WHERE id IN (${to_cancel%,}, ${to_evict%,}) GROUP BY state ORDER BY state) x")"
stuck="$(count "SELECT count(*) FROM jobs WHERE state = 'EVICTING' OR (cancel_requested AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))")"
curl -fsS "$EMU_URL/emulator/jobs" |
  jq -r '.jobs[] | select(.state == "QUEUED" or .state == "SCHEDULED" or .state == "RUNNING") | .jobId' >"$T/live.txt"
live_bad=0
while read -r bid; do
  [[ -z "$bid" ]] && continue
  n="$(count "SELECT count(*) FROM jobs WHERE 'gpugate-' || id || '-a' || attempt = '$bid' AND state IN ('QUEUED', 'RUNNING')")"
  ((n == 1)) || live_bad=$((live_bad + 1))
done <"$T/live.txt"

echo
echo "bench/faults.sh: Batch latency $(bench_latency_label), $(bench_calc "$RATE * 100") % of mutations refused or lost ($stats), cancel lag $LAG_MS ms; $(nproc) cores"
bench_header
bench_row "cancel → CANCELLED: p50/max" "$c50 / $cmax s ($cn of $cancels_ok accepted)" "$((JOBS / 2)) cancels at once ($cancels_ended of jobs already FAILED)" "-" "≤ 30 s, all" \
  "$(bench_true "$cmax <= 30" && ((cn == cancels_ok)) && echo yes || echo NO)"
bench_row "preemption → requeued: p50/max" "$e50 / $emax s ($requeued of $preempted preempted)" "$JOBS urgent jobs at once" "-" "≤ 30 s, all" \
  "$(bench_true "$emax <= 30" && ((requeued == preempted)) && echo yes || echo NO)"
bench_row "EVICTING or cancel pending after quiet" "$stuck" "-" "-" "0" "$( ((stuck == 0)) && echo yes || echo NO)"
bench_row "live Batch jobs of ended/pending jobs" "$live_bad" "-" "-" "0" "$( ((live_bad == 0)) && echo yes || echo NO)"
