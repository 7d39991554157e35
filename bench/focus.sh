#!/usr/bin/env bash
# bench/focus.sh — the FOCUS 1.2 export of a year of rollups: its time and
# the server's memory (not a test; bench/ingest.sh runs it at its end).
#
# Fills cost_rollups directly with a year (2025) of rollups —
# BENCH_FOCUS_TEAMS teams (default 20) × 365 days × BENCH_FOCUS_SKUS SKUs
# (default 40), each with credits, so two FOCUS rows apiece — starts
# gpugate serve, and downloads GET /v1/costs/focus for the whole year with
# curl, plain and gzipped. Prints rollups, rows, bytes, seconds, rows/s and
# the server's peak RSS (VmHWM) before and after the exports: the export
# streams from a cursor a batch at a time, so the peak must not grow with
# the range. Also checks that the sum of BilledCost equals the JSON
# report's net cost.
set -euo pipefail
BENCH_NAME=bench/focus.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

teams=${BENCH_FOCUS_TEAMS:-20}
skus=${BENCH_FOCUS_SKUS:-40}
# shellcheck disable=SC2119 # no binary but gpugate
bench_setup
export GPUGATE_BATCH_BACKEND=none

bench_log "filling a year of rollups ($teams teams × 365 days × $skus SKUs) ..."
"${PSQL[@]}" -c "INSERT INTO cost_rollups (team, day, invoice_month, service,
  sku, flavor, location, currency, cost_type, billing_account, charge_class,
  month, report_day, cost, credits, gpu_hours, rows)
  SELECT 'team-' || t, d::date, to_char(d, 'YYYY-MM'), 'Compute Engine',
    'Nvidia L4 GPU SKU ' || k, 'l4-spot', 'us-central1', 'USD', 'regular',
    '0A1B2C-3D4E5F-6A7B8C', '', to_char(d, 'YYYY-MM'), d::date,
    round((random() * 100)::numeric, 6), -round((random() * 5)::numeric, 6),
    1, 1
  FROM generate_series(1, $teams) t,
       generate_series('2025-01-01'::date, '2025-12-31'::date, '1 day') d,
       generate_series(1, $skus) k"
"${PSQL[@]}" -c "ANALYZE cost_rollups"
rollups=$("${PSQL[@]}" -c "SELECT count(*) FROM cost_rollups")

bench_start_gpugate
fin=$(bench_token finance finance)
range='from=2025-01-01&to=2025-12-31'
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$GG_PID/status"; }

# warm the server up with a small export, so the baseline is its working
# size and not its start-up size
curl -sf -o /dev/null -H "Authorization: Bearer $fin" \
  "$GG_URL/v1/costs/focus?from=2025-01-01&to=2025-01-01"
before=$(hwm)

# export NAME [curl options]: download the year into $T/NAME; prints
# "seconds bytes"
export_year() {
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  curl -sf "$@" -o "$T/$name" -H "Authorization: Bearer $fin" \
    "$GG_URL/v1/costs/focus?$range"
  end=$(date +%s.%N)
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') $(stat -c %s "$T/$name")"
}

bench_log "exporting the year (plain) ..."
read -r plain_s plain_b < <(export_year plain.csv)
bench_log "exporting the year (gzip) ..."
read -r gz_s gz_b < <(export_year gz.csv.gz -H 'Accept-Encoding: gzip')
after=$(hwm)

lines=$(($(wc -l <"$T/plain.csv") - 1))
gunzip -c "$T/gz.csv.gz" | cmp -s - "$T/plain.csv" ||
  bench_die "the gzipped export is not the plain one"
# BilledCost sums against the JSON report, to the cent
focus_sum=$(awk -F, 'NR > 1 { s += $1 } END { printf "%.2f", s }' "$T/plain.csv")
report_sum=$(curl -sf -H "Authorization: Bearer $fin" "$GG_URL/v1/costs?$range" |
  jq -r '[.totals[].net_cost] | add | . * 100 | round / 100 | tostring')
awk -v a="$focus_sum" -v b="$report_sum" 'BEGIN { exit !(a - b < 0.011 && b - a < 0.011) }' ||
  bench_die "FOCUS BilledCost sums to $focus_sum, the report says $report_sum"

printf 'focus: %d rollups (a year, %d teams), %d cores, %s\n' "$rollups" \
  "$teams" "$(nproc)" "$("${PSQL[@]}" -c 'SHOW server_version')"
printf '%-28s %8s %8s %8s %9s %14s\n' "" rows MB seconds rows/s "server RSS MiB"
awk -v l="FOCUS export, plain" -v r="$lines" -v b="$plain_b" -v s="$plain_s" \
  -v k0="$before" -v k1="$after" 'BEGIN {
    printf "%-28s %8d %8.1f %8.2f %9.0f %6.1f → %5.1f\n", l, r, b / 1e6, s,
           r / s, k0 / 1024, k1 / 1024 }'
awk -v l="FOCUS export, gzip" -v r="$lines" -v b="$gz_b" -v s="$gz_s" \
  'BEGIN { printf "%-28s %8d %8.1f %8.2f %9.0f\n", l, r, b / 1e6, s, r / s }'
printf 'BilledCost sum %s = the report'"'"'s net cost %s\n' "$focus_sum" "$report_sum"
