#!/usr/bin/env bash
# bench/oidc.sh — what a token of the organisation's OpenID Provider costs
# against gpugate's own (`make bench` runs it; it prints figures and
# asserts nothing).
#
#   get by id  GET /v1/teams/bench/jobs/{id} with wrk -t2 -c32
#              (bench/wrk/get.lua) over jobs submitted first, signed by
#              (A) gpugate's own HS256 member token and (B) an RS256 at+jwt
#              access token of a real OpenID Provider (tests/oidc/
#              provider.mjs, panva's oidc-provider), its member grant from
#              an access binding; and (C) the console's session cookie
#              (with X-GPUGate-CSRF: 1) of a session of the same provider
#              whose groups bind the same grant; runs in the order
#              A B C C B A, means of two each. Tokens are verified once and
#              then answered from the cache of verified tokens, sessions
#              read once and then answered from the replica's cache of
#              sessions, so the goal of B ÷ A and C ÷ A is >= 0.9.
#
# BENCH_KEEP=1 keeps the temp dir (logs, PostgreSQL) for inspection.
set -euo pipefail
BENCH_NAME=bench/oidc.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SECS="${BENCH_SECONDS:-10}"
CONNS=32
JOBS=300

bench_setup
bench_need wrk wrk
command -v node >/dev/null 2>&1 || bench_die "node is missing (deploy/install-deps.sh)"

cat >"$T/objects.json" <<'JSON'
{
  "priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},
  "flavors": {"l4-bench": {"provisioning_model": "STANDARD", "machine_type": "g2-standard-24",
    "accelerator_type": "nvidia-l4", "gpus_per_vm": 2, "locations": ["us-central1"],
    "price_per_gpu_hour_usd": 0.71, "on_demand_price_per_gpu_hour_usd": 0.71}},
  "cluster_queues": {"cq-bench": {"flavors": [{"name": "l4-bench", "resources": {
    "gpu": {"nominal": 1000000000}, "cpu_milli": {"nominal": 1000000000000},
    "memory_mib": {"nominal": 1000000000000}}}]}},
  "teams": {"bench": {"display_name": "Bench", "cost_center": "bench"}},
  "team_queues": {"bench": {"main": {"cluster_queue": "cq-bench"}}},
  "access_bindings": {"bench-members": {"subjects": [{"kind": "group", "name": "ml-team-a"}],
    "role": "member", "team": "bench"}}
}
JSON
"$BIN/gpugate" apply "$T/objects.json" >/dev/null

# the provider, on a free port; its first stdout line names it
node tests/oidc/provider.mjs --keys "$T/idp-keys.json" >"$T/idp.out" 2>"$T/idp.log" &
BENCH_PIDS+=("$!")
for ((i = 0; i < 200; i++)); do
  grep -q '^port ' "$T/idp.out" 2>/dev/null && break
  sleep 0.1
done
idp_port="$(awk '/^port /{print $2}' "$T/idp.out")"
[[ -n "$idp_port" ]] || bench_die "the OpenID Provider did not start (see $T/idp.log)"
IDP="http://127.0.0.1:$idp_port"

export GPUGATE_BATCH_BACKEND=none GPUGATE_OIDC_ISSUERS="$IDP" GPUGATE_OIDC_AUDIENCES=gpugate
bench_start_gpugate
own="$(bench_token bench member)"
provider="$(curl -sf -d grant_type=client_credentials -d client_id=team-a-bot \
  -d client_secret=team-a-bot-secret-0123456789abcdef -d scope=api \
  -d resource=https://gpugate.test/rs "$IDP/token" | jq -r .access_token)"
[[ -n "$provider" && "$provider" != null ]] || bench_die "no access token from the provider"

bench_log "submitting $JOBS jobs"
for ((i = 0; i < JOBS; i++)); do
  curl -sf -o /dev/null -H "Authorization: Bearer $own" -H 'Content-Type: application/json' \
    -d '{"name": "bench", "queue": "main", "task": {"image": "us-docker.pkg.dev/p/r/trainer:1.2", "cpu_milli": 1000, "memory_mib": 4096, "gpu": 1}}' \
    "$GG_URL/v1/teams/bench/jobs" || bench_die "a submission failed"
done
"${PSQL[@]}" -c "SELECT '/v1/teams/bench/jobs/' || id FROM jobs ORDER BY seq" >"$T/paths"
export BENCH_PATHS="$T/paths"

# a console session of the provider's person in ml-team-a, stored as a
# sign-in stores it (the SHA-256 of its id); without a refresh token it is
# never re-validated, so the run measures the session's own path
sid="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"${PSQL[@]}" -v sid="$sid" -v iss="$IDP" >/dev/null <<'SQL'
INSERT INTO sessions (id_hash, issuer, subject, email, groups, expires_at)
VALUES (encode(sha256(convert_to(:'sid', 'UTF8')), 'hex'), :'iss', 'bench-person',
        'bench-person@example.com', '["ml-team-a"]', now() + interval '2 hours');
SQL
session="__Host-gpugate_session=$sid"

# wrk: warm-up, then measured; print requests/s (non-2xx are reported);
# $1 a bearer token, $2 (optional) a Cookie header instead
wrk_rps() {
  local out
  BENCH_TOKEN="$1" BENCH_COOKIE="${2:-}" wrk -t2 -c"$CONNS" -d2s -s bench/wrk/get.lua "$GG_URL" >/dev/null 2>&1 || true
  out="$(BENCH_TOKEN="$1" BENCH_COOKIE="${2:-}" wrk -t2 -c"$CONNS" -d"${SECS}s" -s bench/wrk/get.lua "$GG_URL" 2>"$T/wrk.err")" ||
    bench_die "wrk failed: $(cat "$T/wrk.err")"
  echo "$out" >>"$T/wrk.log"
  grep -q 'HTTP' "$T/wrk.err" && bench_log "failed responses: $(head -3 "$T/wrk.err")"
  awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out"
}

bench_log "get by id: own HS256 token, provider RS256 token, session cookie (A B C C B A, ${SECS} s each)"
a1="$(wrk_rps "$own")"
b1="$(wrk_rps "$provider")"
c1="$(wrk_rps "" "$session")"
c2="$(wrk_rps "" "$session")"
b2="$(wrk_rps "$provider")"
a2="$(wrk_rps "$own")"
own_mean="$(awk "BEGIN { printf \"%.0f\", ($a1 + $a2) / 2 }")"
idp_mean="$(awk "BEGIN { printf \"%.0f\", ($b1 + $b2) / 2 }")"
ses_mean="$(awk "BEGIN { printf \"%.0f\", ($c1 + $c2) / 2 }")"
bench_log "own $a1, $a2; provider $b1, $b2; session $c1, $c2 req/s"
curl -s -o "$T/metrics.txt" "$GG_URL/metrics" || true
hits="$(awk '/^gpugate_session_cache_hits_total /{print $2}' "$T/metrics.txt")"
bench_log "session requests answered from the cache: ${hits:-none}"

echo
echo "bench/oidc.sh: wrk -c$CONNS, 2 client threads, ${SECS} s runs, A B C C B A; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
bench_header
r="$(bench_calc "$idp_mean / $own_mean")"
met=NO
bench_true "$idp_mean / $own_mean >= 0.9" && met=yes
bench_row "get by id, provider RS256 token" "$idp_mean req/s" "$own_mean req/s own HS256 token" "$r" ">= 0.9" "$met"
r="$(bench_calc "$ses_mean / $own_mean")"
met=NO
bench_true "$ses_mean / $own_mean >= 0.9" && met=yes
bench_row "get by id, console session cookie" "$ses_mean req/s" "$own_mean req/s own HS256 token" "$r" ">= 0.9" "$met"
