#!/usr/bin/env bash
# bench/sse.sh — the live event stream (GET /v1/teams/{team}/events) with
# SSE_CLIENTS (1,000) clients on one replica: the replica's resident
# memory without and with them, its CPU while they are connected and
# idle, and the commit → client latency of SSE_RATE (200) events a second
# for SSE_LOAD_S (20) seconds, over every delivery to every client
# (build/bench_sse). Events are inserted by one session, one transaction
# each, paced to the rate (on a busy host the session may fall behind it); each carries the time just before its commit,
# and clients compare it with their receive time (same host clock). Goal
# (issue 36): p99 <= 1 s at 200 events/s. Prints figures, asserts
# nothing.
set -euo pipefail

BENCH_NAME=bench/sse.sh
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLIENTS="${SSE_CLIENTS:-1000}"
RATE="${SSE_RATE:-200}"
IDLE_S="${SSE_IDLE_S:-10}"
LOAD_S="${SSE_LOAD_S:-20}"

bench_setup build/bench_sse
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
