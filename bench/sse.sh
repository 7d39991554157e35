#!/usr/bin/env bash
# bench/sse.sh — the live event stream (GET /v1/teams/{team}/events) with
# SSE_CLIENTS (1,000) clients on one replica: the replica's resident
# memory without and with them, its CPU while they are connected and
# idle, and the commit → client latency of SSE_RATE (200) events a second
# for SSE_LOAD_S (20) seconds, over every delivery to every client
# (build/bench_sse). Events are inserted by one session, one transaction
# each, paced to the rate (on a busy host the session may fall behind it); each carries the time just before its commit,
# and clients compare it with their receive time (same host clock). Goal
# (issue 36): p99 <= 1 s at 200 events/s. Then SSE_FOLLOWERS (200)
# followers of SSE_FOLLOW_JOBS (50) jobs' logs (…/logs?follow=true) on a
# gpugate that reads the Cloud Logging emulator, polling every 500 ms
# (120 calls a minute wanted): the entries:list calls a minute the
# emulator counts over SSE_FOLLOW_S (60) seconds, against the read budget
# (GPUGATE_LOGGING_READS_PER_MINUTE, 50). Prints figures, asserts
# nothing.
set -euo pipefail

BENCH_NAME=bench/sse.sh
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLIENTS="${SSE_CLIENTS:-1000}"
RATE="${SSE_RATE:-200}"
IDLE_S="${SSE_IDLE_S:-10}"
LOAD_S="${SSE_LOAD_S:-20}"

bench_setup build/bench_sse build/batch_emulator build/logging_emulator
"$BIN/gpugate" apply deploy/examples/reference-architecture.json >/dev/null
export GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=0 # every client is 127.0.0.1
bench_start_gpugate
port="${GG_URL##*:}"
tok="$(bench_token team-a member)"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$GG_PID/stat"; }
hz="$(getconf CLK_TCK)"

rss0="$(rss_kib)"
"$BIN/bench_sse" "$port" team-a "$tok" "$CLIENTS" $((IDLE_S + 4 * LOAD_S + 60)) >"$T/clients.json" &
clients_pid=$!
BENCH_PIDS+=("$clients_pid")
sleep 3 # the clients connect
rss1="$(rss_kib)"
c0="$(cpu_ticks)"
sleep "$IDLE_S"
c1="$(cpu_ticks)"
# RATE events a second, each its own transaction, paced to the schedule
"${PSQL[@]}" -c "
DO \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1..$((RATE * LOAD_S)) LOOP
    INSERT INTO job_events (job_id, team, from_state, to_state, attempt, message)
    VALUES ('j-benchsse00000', 'team-a', 'PENDING', 'PENDING', 1,
            't=' || (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
    COMMIT;
    PERFORM pg_sleep(greatest(0, extract(epoch FROM
      t0 + i * interval '1 second' / $RATE - clock_timestamp())));
  END LOOP;
END
\$\$"
c2="$(cpu_ticks)"
rss2="$(rss_kib)"
sleep 5 # the last deliveries
kill -TERM "$clients_pid"
wait "$clients_pid" || true
res="$(cat "$T/clients.json")"

printf '| %-44s | %-28s |\n' "figure ($CLIENTS clients, one replica)" "gpugate"
printf '| %-44s | %-28s |\n' "---" "---"
printf '| %-44s | %-28s |\n' "RSS without clients" "$((rss0 / 1024)) MiB"
printf '| %-44s | %-28s |\n' "RSS with the clients idle" "$((rss1 / 1024)) MiB ($(((rss1 - rss0) / CLIENTS)) KiB a client)"
printf '| %-44s | %-28s |\n' "CPU while idle (${IDLE_S} s)" "$(awk -v t=$((c1 - c0)) -v hz="$hz" -v s="$IDLE_S" 'BEGIN { printf "%.1f %%", 100 * t / hz / s }')"
printf '| %-44s | %-28s |\n' "CPU at $RATE events/s" "$(awk -v t=$((c2 - c1)) -v hz="$hz" -v s="$LOAD_S" 'BEGIN { printf "%.1f %%", 100 * t / hz / s }')"
printf '| %-44s | %-28s |\n' "RSS after the load" "$((rss2 / 1024)) MiB"
printf '| %-44s | %-28s |\n' "commit → client p50 / p99 / max" "$(jq -r '"\(.p50_ms) / \(.p99_ms) / \(.max_ms) ms"' <<<"$res")"
printf '| %-44s | %-28s |\n' "deliveries (events × clients)" "$(jq -r '"\(.latency_samples) of \('"$((RATE * LOAD_S))"' * .connected)"' <<<"$res")"
printf '| %-44s | %-28s |\n' "clients connected / closed early" "$(jq -r '"\(.connected) / \(.closed)"' <<<"$res")"

# ---- log followers: Cloud Logging calls a minute ---------------------------
FOLLOWERS="${SSE_FOLLOWERS:-200}"
FJOBS="${SSE_FOLLOW_JOBS:-50}"
FOLLOW_S="${SSE_FOLLOW_S:-60}"
kill -TERM "$GG_PID"
wait "$GG_PID" || true
rm -f "$T/log.port"
LOG_EMU_LISTEN=127.0.0.1:0 LOG_EMU_PORT_FILE="$T/log.port" \
  LOG_EMU_READS_PER_MINUTE=100000 "$BIN/logging_emulator" 2>>"$T/logemu.log" &
log_pid=$!
BENCH_PIDS+=("$log_pid")
log_url="http://127.0.0.1:$(bench_wait_port "$T/log.port" "$log_pid" "the logging emulator")"
EMU_LOGGING_URL="$log_url" EMU_LATENCY_MS="" bench_start_emulator
export GPUGATE_BATCH_BACKEND=gcp GPUGATE_GCP_PROJECT=test-project \
  GPUGATE_BATCH_ENDPOINT="$EMU_URL" GCE_METADATA_HOST="${EMU_URL#http://}" \
  GPUGATE_LOGGING_ENDPOINT="$log_url" GPUGATE_LOGGING_POLL_MS=500
budget="${GPUGATE_LOGGING_READS_PER_MINUTE:-50}"
bench_start_gpugate
port="${GG_URL##*:}"
: >"$T/paths"
for ((j = 0; j < FJOBS; j++)); do
  id="$(curl -sf -X POST "$GG_URL/v1/teams/team-a/jobs" \
    -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d '{"name": "follow", "queue": "lp", "task_count": 1,
         "task": {"image": "us-docker.pkg.dev/p/r/trainer:1.2",
                  "commands": ["python", "train.py"],
                  "env": {"EMU_RUN_MS": "3600000"},
                  "cpu_milli": 1000, "memory_mib": 5120, "gpu": 1}}' | jq -r .id)"
  echo "/v1/teams/team-a/jobs/$id/logs?follow=true" >>"$T/paths"
done
"$BIN/bench_sse" "$port" team-a "$tok" "$FOLLOWERS" $((FOLLOW_S + 60)) "$T/paths" >"$T/followers.json" &
followers_pid=$!
BENCH_PIDS+=("$followers_pid")
sleep 5 # the followers connect and register
curl -sf -X DELETE "$log_url/emulator/calls" >/dev/null
sleep "$FOLLOW_S"
calls="$(curl -sf "$log_url/emulator/calls")"
kill -TERM "$followers_pid"
wait "$followers_pid" || true
n_calls="$(jq '.calls | length' <<<"$calls")"
last="$(jq -r '.calls[-1].body // ""' <<<"$calls")"
named=0
while read -r p; do
  p="${p#/v1/teams/team-a/jobs/}"
  [[ "$last" == *"${p%%/*}"* ]] && named=$((named + 1))
done <"$T/paths"
printf '| %-44s | %-28s |\n' "Logging calls a minute, $FOLLOWERS followers of $FJOBS jobs" "$(awk -v n="$n_calls" -v s="$FOLLOW_S" 'BEGIN { printf "%.1f", n * 60 / s }') (budget $budget, poll wants 120)"
printf '| %-44s | %-28s |\n' "jobs named in the last call" "$named of $FJOBS"
printf '| %-44s | %-28s |\n' "followers connected / closed early" "$(jq -r '"\(.connected) / \(.closed)"' <"$T/followers.json")"
