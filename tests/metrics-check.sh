#!/usr/bin/env bash
# metrics-check.sh — gpugate's Prometheus exposition, alert rules and
# Grafana dashboards are valid. Starts nothing itself.
#
#   tests/metrics-check.sh [URL | FILE]
#
#   1. metrics       (with an argument) the /metrics text — fetched from URL
#                    (http:// or https://) or read from FILE — passes
#                    `promtool check metrics`, and declares every SPEC §7
#                    family with its type.
#   2. names         (with an argument) every gpugate_* metric the rules and
#                    dashboards query is declared in that text.
#   3. rules         `promtool check rules` on deploy/prometheus/*.yml (all
#                    but prometheus.yml) and `promtool check config` on
#                    prometheus.yml.
#   4. rule-tests    `promtool test rules` on deploy/prometheus/tests/*.yml.
#   5. dashboards    deploy/grafana/*.json parse (jq), have schemaVersion
#                    >= 36, unique panel ids, every query on the
#                    ${DS_PROMETHEUS} data source, and PromQL that parses.
#
# Each check prints "PASS: <name>" or "FAIL: <name>" after its details;
# the script exits 1 if any failed, 2 when promtool or jq is missing
# (deploy/install-deps.sh installs the prometheus and jq packages).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

for tool in promtool jq; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "metrics-check: $tool not found; run deploy/install-deps.sh" >&2
    exit 2
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
indent() { sed 's/^/    /'; }

# SPEC §7 families and their types.
families=(
  "gpugate_http_requests_total counter"
  "gpugate_http_request_duration_seconds histogram"
  "gpugate_pending_jobs gauge"
  "gpugate_admitted_jobs_total counter"
  "gpugate_evicted_jobs_total counter"
  "gpugate_admission_wait_seconds histogram"
  "gpugate_admission_cycle_seconds histogram"
  "gpugate_cluster_queue_usage gauge"
  "gpugate_cluster_queue_nominal_quota gauge"
  "gpugate_cluster_queue_borrowing_limit gauge"
  "gpugate_batch_requests_total counter"
  "gpugate_dispatch_backlog gauge"
  "gpugate_billing_rows_ingested_total counter"
  "gpugate_pubsub_pushes_total counter"
  "gpugate_team_month_net_cost_usd gauge"
)

rule_files=()
config_files=()
for f in deploy/prometheus/*.yml; do
  [[ -e "$f" ]] || continue
  if [[ "$(basename "$f")" == prometheus.yml ]]; then
    config_files+=("$f")
  else
    rule_files+=("$f")
  fi
done

# --- 1. metrics ---------------------------------------------------------------
if [[ $# -ge 1 ]]; then
  text="$work/metrics.txt"
  case "$1" in
  http://* | https://*)
    if ! curl -fsS --max-time 10 -o "$text" "$1" 2>"$work/curl.err"; then
      indent <"$work/curl.err"
      fail metrics
      : >"$text"
    fi
    ;;
  *)
    if [[ ! -r "$1" ]]; then
      echo "    cannot read $1"
      fail metrics
      : >"$text"
    else
      cp "$1" "$text"
    fi
    ;;
  esac
  if [[ -s "$text" ]]; then
    ok=1
    if ! promtool check metrics <"$text" >"$work/check.out" 2>&1; then
      indent <"$work/check.out"
      ok=0
    fi
    for fam in "${families[@]}"; do
      read -r name type <<<"$fam"
      if ! grep -qx "# TYPE $name $type" "$text"; then
        echo "    missing: # TYPE $name $type"
        ok=0
      fi
    done
    if ((ok)); then pass metrics; else fail metrics; fi

    # --- 2. names -------------------------------------------------------------
    declared="$work/declared"
    sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$text" | sort -u >"$declared"
    {
      sed -e '/^[[:space:]]*#/d' "${rule_files[@]}" 2>/dev/null
      jq -r '.. | .expr? // empty | strings' deploy/grafana/*.json 2>/dev/null
    } | grep -oE '\bgpugate_[a-z_]*[a-z]' |
      sed -E 's/_(bucket|sum|count)$//' | sort -u >"$work/used"
    unknown=$(comm -23 "$work/used" "$declared")
    if [[ -n "$unknown" ]]; then
      echo "    queried but not exposed:"
      indent <<<"$unknown"
      fail names
    else
      pass names
    fi
  elif [[ $failed -eq 0 ]]; then
    echo "    empty metrics text"
    fail metrics
  fi
fi

# --- 3. rules -------------------------------------------------------------------
ok=1
if ((${#rule_files[@]})); then
  if ! promtool check rules "${rule_files[@]}" >"$work/rules.out" 2>&1; then ok=0; fi
  indent <"$work/rules.out"
fi
for f in "${config_files[@]}"; do
  if ! promtool check config --syntax-only "$f" >"$work/config.out" 2>&1; then ok=0; fi
  indent <"$work/config.out"
done
if ((${#rule_files[@]} + ${#config_files[@]} == 0)); then
  echo "    no files in deploy/prometheus"
  ok=0
fi
if ((ok)); then pass rules; else fail rules; fi

# --- 4. rule-tests ---------------------------------------------------------------
tests=(deploy/prometheus/tests/*.yml)
if [[ -e "${tests[0]}" ]]; then
  if promtool test rules "${tests[@]}" >"$work/tests.out" 2>&1; then
    pass rule-tests
  else
    indent <"$work/tests.out"
    fail rule-tests
  fi
fi

# --- 5. dashboards ---------------------------------------------------------------
ok=1
dashboards=(deploy/grafana/*.json)
if [[ ! -e "${dashboards[0]}" ]]; then
  echo "    no dashboards in deploy/grafana"
  ok=0
fi
for d in "${dashboards[@]}"; do
  [[ -e "$d" ]] || continue
  if ! jq empty "$d" 2>"$work/jq.err"; then
    echo "    $d: not JSON"
    indent <"$work/jq.err"
    ok=0
    continue
  fi
  problems=$(jq -r '
    [.panels[]?, (.panels[]?.panels[]?)] as $all
    | (if (.schemaVersion // 0) < 36 then "schemaVersion \(.schemaVersion) < 36" else empty end),
      (if ([.templating.list[]? | select(.name == "DS_PROMETHEUS" and .type == "datasource")] | length) == 0
       then "no datasource variable DS_PROMETHEUS" else empty end),
      ($all | map(.id) | group_by(.) | map(select(length > 1)) | .[] | "panel id \(.[0]) repeated"),
      ($all[] | select(.type != "row") | . as $p
        | (if (.datasource.uid // "") != "${DS_PROMETHEUS}" then "panel \"\($p.title)\": data source is not ${DS_PROMETHEUS}" else empty end),
          (.targets[]? | select((.datasource.uid // "${DS_PROMETHEUS}") != "${DS_PROMETHEUS}") | "panel \"\($p.title)\": a query is not on ${DS_PROMETHEUS}"),
          (if ((.targets // []) | length) == 0 then "panel \"\($p.title)\": no query" else empty end))
  ' "$d")
  if [[ -n "$problems" ]]; then
    echo "    $d:"
    indent <<<"$problems" | indent
    ok=0
  fi
  # PromQL: each query as a recording rule, dashboard variables replaced
  # by plain values, checked by promtool.
  rules="$work/$(basename "$d" .json).rules.yml"
  {
    echo "groups:"
    echo "  - name: dashboard"
    echo "    rules:"
    jq -r '[.panels[]?, (.panels[]?.panels[]?)] | .[] | .targets[]? | .expr // empty' "$d" |
      sed -e 's/\$__rate_interval/5m/g; s/\$__interval/1m/g; s/\$__range/1h/g' \
        -e 's/\$resource/gpu/g; s/\$[a-z_]*/.*/g' |
      while IFS= read -r expr; do
        echo "      - record: dashboard:query"
        printf '        expr: %s\n' "$(jq -Rn --arg e "$expr" '$e')"
      done
  } >"$rules"
  if ! promtool check rules "$rules" >"$work/promql.out" 2>&1; then
    echo "    $d: a query does not parse:"
    indent <"$work/promql.out" | indent
    ok=0
  fi
done
if ((ok)); then pass dashboards; else fail dashboards; fi

exit $failed
