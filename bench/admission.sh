#!/usr/bin/env bash
# bench/admission.sh — admission cycles with 100,000 pending jobs
# (`make bench` runs it; it prints figures and asserts nothing).
#
# build/bench_admission drives the admission leader's own code
# (control/admission.c) against a throwaway PostgreSQL: one flavor, one
# cluster queue of 8 GPUs, BENCH_ADM_PENDING (default 100,000) pending
# 1-GPU jobs; then idle cycles, and rounds of 1,000 new jobs. See the top
# of bench/admission.c for what each row times. Goal: an idle cycle well
# under 1 ms of CPU, whatever the backlog.
#
# BENCH_KEEP=1 keeps the temp dir (PostgreSQL and its data) for inspection;
# BENCH_PG_LOG_MS=N sets log_min_duration_statement (in its pg/log);
# BENCH_ADM_WRAP runs bench_admission under a command, e.g.
# BENCH_ADM_WRAP="perf record -o /tmp/perf.data --".
set -euo pipefail
BENCH_NAME="bench/admission.sh"
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

bench_setup build/bench_admission
cat >"$T/config.json" <<'JSON'
{"priority_classes": {"default": {"value": 10, "preemption_policy": "Never", "default": true}},
 "flavors": {"f": {"provisioning_model": "STANDARD", "machine_type": "g2-standard-24",
                   "accelerator_type": "nvidia-l4", "gpus_per_vm": 2,
                   "locations": ["us-central1"], "price_per_gpu_hour_usd": 0.71,
                   "on_demand_price_per_gpu_hour_usd": 0.71}},
 "cluster_queues": {"cq": {"flavors": [{"name": "f", "resources": {
     "gpu": {"nominal": 8}, "cpu_milli": {"nominal": 1000000000},
     "memory_mib": {"nominal": 1000000000}}}]}},
 "teams": {"bench": {"display_name": "Bench", "cost_center": "bench",
                     "monthly_budget_usd": 1000000, "budget_policy": "none"}},
 "team_queues": {"bench": {"q": {"cluster_queue": "cq"},
                           "q2": {"cluster_queue": "cq", "fair_sharing_weight": 2}}}}
JSON
"$BIN/gpugate" apply "$T/config.json" >/dev/null
if [[ -n "${BENCH_PG_LOG_MS:-}" ]]; then # diagnosis: slow statements
  "${PSQL[@]}" -c "ALTER DATABASE gpugate SET log_min_duration_statement = $BENCH_PG_LOG_MS"
fi
bench_log "inserting ${BENCH_ADM_PENDING:-100000} pending jobs, then timing cycles"
${BENCH_ADM_WRAP:-} nice -n 10 "$BIN/bench_admission" "$PGURI"
echo "bench/admission.sh: $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"); PostgreSQL on the same machine"
