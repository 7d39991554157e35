#!/usr/bin/env bash
# bench/slurm.sh — the peer in gpugate's HTTP benchmark: Slurm's REST API
# (slurmrestd from Debian 12, Slurm 22.05, OpenAPI plugin v0.0.38) on a
# one-node cluster on loopback, measured with the same wrk load as
# gpugate's rows (bench/http.sh runs it in the same run and puts its
# figures in the same table).
#
#   submit   POST /slurm/v0.0.38/job/submit, JWT auth (AuthAltTypes=
#            auth/jwt, an HS256 token from `scontrol token`), a batch job
#            comparable to gpugate's: 2 tasks, a name, environment, a
#            script, held (`hold: true`, as gpugate's jobs wait for
#            admission), wrk -t2 -c32 (bench/wrk/slurm-submit.lua);
#            two runs back to back, reported with their mean
#   read     GET /slurm/v0.0.38/job/{id} over the jobs the submit run
#            created, wrk -t2 -c32 (bench/wrk/get.lua)
#
# Everything runs as root from a temp dir (munged --force, slurmctld and
# slurmd with SlurmUser=root, no systemd) except slurmrestd, which refuses
# root and runs as the `slurm` user; all of it is stopped at exit. The
# packages (slurmctld slurmd slurmrestd munge slurm-wlm-jwt-plugin) are
# installed from Debian when missing.
#
# Each measured run also records the CPU (from /proc: user + system, all
# threads) that slurmrestd, slurmctld, slurmd and munged spent per request.
#
# Usage: bench/slurm.sh [OUT]   — OUT gets "submit=N read=N jobs=N
# runs=N,N cpu_submit=R,C,D,M cpu_submit2=R,C,D,M cpu_read=R,C,D,M"
# (requests/s: submit is the mean of the two runs; CPU in µs per request of
# slurmrestd, slurmctld, slurmd, munged); without OUT the figures are
# printed. BENCH_SECONDS as in http.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=bench/slurm.sh
SECS="${BENCH_SECONDS:-10}"
CONNS=32
OUT="${1:-}"

log() { echo "$NAME: $*" >&2; }
die() {
  log "$*"
  exit 1
}

need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  log "installing $2 (for $1)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
    --no-install-recommends "$2" >&2 || die "$1 is missing and apt-get could not install $2"
}
[[ "$(id -u)" -eq 0 ]] || die "run as root (slurmctld and slurmd need it here)"
need slurmctld slurmctld
need slurmd slurmd
need slurmrestd slurmrestd
need munged munge
need wrk wrk
need jq jq
# slurmctld's half of JWT authentication (auth/jwt) is a package of its own
[[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/auth_jwt.so ]] || {
  log "installing slurm-wlm-jwt-plugin (auth/jwt)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
    --no-install-recommends slurm-wlm-jwt-plugin >&2 || die "cannot install slurm-wlm-jwt-plugin"
}
id slurm >/dev/null 2>&1 || die "no slurm user (the slurmrestd package makes it)"

# Slurm's state (a file per job) in memory when /dev/shm is there, as the
# PostgreSQL of the gpugate rows runs with fsync off
tmp=/tmp
[[ -d /dev/shm && -w /dev/shm ]] && tmp=/dev/shm
S="$(mktemp -d "$tmp/gpugate-bench-slurm.XXXXXX")"
chmod 755 "$S"
PIDS=()
cleanup() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${PIDS[i]}" 2>/dev/null || true
  done
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    wait "${PIDS[i]}" 2>/dev/null || true
  done
  if [[ -n "${BENCH_KEEP:-}" ]]; then log "kept $S (BENCH_KEEP)"; else rm -rf "$S"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# a free loopback port (bound and released at once)
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$S/munge" "$S/state" "$S/spool"
chmod 700 "$S/munge"
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge/munge.key"
dd if=/dev/urandom of="$S/jwt_hs256.key" bs=32 count=1 status=none
chmod 400 "$S/jwt_hs256.key"
CTLD_PORT="$(free_port)"
SLURMD_PORT="$(free_port)"
REST_PORT="$(free_port)"

cat >"$S/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.sock
CredType=cred/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$S/jwt_hs256.key
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
SlurmctldDebug=error
SlurmdDebug=error
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MaxJobCount=1000000
MinJobAge=3600
MailProg=/bin/true
ReturnToService=2
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1024 State=UNKNOWN
PartitionName=bench Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$S/slurm.conf"

munged --force --key-file="$S/munge/munge.key" --socket="$S/munge/munge.sock" \
  --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" \
  --seed-file="$S/munge/munged.seed" --foreground 2>>"$S/munge/munged.log" &
MUNGED_PID=$!
PIDS+=($!)
slurmctld -D -i -f "$SLURM_CONF" 2>>"$S/slurmctld.err" &
CTLD_PID=$!
PIDS+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" 2>>"$S/slurmd.err" &
SLURMD_PID=$!
PIDS+=($!)

# slurmctld answers, and the node is up
for ((i = 0; ; i++)); do
  if state="$(sinfo -h -N -o %t 2>/dev/null)" && [[ "$state" =~ ^(idle|mix|alloc) ]]; then break; fi
  ((i < 300)) || die "the one-node cluster did not come up: $(tail -3 "$S/slurmctld.log" "$S/slurmd.log" 2>&1)"
  sleep 0.1
done

# the jobs' owner: slurmrestd refuses tokens for root
JOB_USER=nobody
TOKEN="$(scontrol token username="$JOB_USER" lifespan=7200 | sed -n 's/^SLURM_JWT=//p')"
[[ -n "$TOKEN" ]] || die "scontrol token gave no token"

chmod 644 "$SLURM_CONF"
setpriv --reuid=slurm --regid=slurm --clear-groups -- \
  env SLURM_CONF="$SLURM_CONF" SLURM_JWT=daemon slurmrestd -a rest_auth/jwt -s openapi/v0.0.38 \
  -t 8 "127.0.0.1:$REST_PORT" 2>>"$S/slurmrestd.log" &
REST_PID=$! # setpriv execs slurmrestd: the same process
PIDS+=($!)
URL="http://127.0.0.1:$REST_PORT"
for ((i = 0; ; i++)); do
  if curl -fs -o /dev/null -H "X-SLURM-USER-NAME: $JOB_USER" -H "X-SLURM-USER-TOKEN: $TOKEN" \
    "$URL/slurm/v0.0.38/ping" 2>/dev/null; then break; fi
  ((i < 300)) || die "slurmrestd did not answer: $(tail -3 "$S/slurmrestd.log")"
  sleep 0.1
done
export SLURM_BENCH_TOKEN="$TOKEN" SLURM_BENCH_USER="$JOB_USER"

# one submission by hand, so that a refusal is reported plainly
one="$(curl -sS -X POST -H "X-SLURM-USER-NAME: $JOB_USER" -H "X-SLURM-USER-TOKEN: $TOKEN" \
  -H 'Content-Type: application/json' --data-binary @bench/wrk/slurm-job.json \
  "$URL/slurm/v0.0.38/job/submit")"
jq -e '.job_id > 0' >/dev/null <<<"$one" || die "slurmrestd refused the job: $one"

# CPU ticks (USER_HZ, user + system, all threads) used so far by each of
# slurmrestd, slurmctld, slurmd and munged
ticks() {
  local p
  for p in "$REST_PID" "$CTLD_PID" "$SLURMD_PID" "$MUNGED_PID"; do
    awk '{printf "%d ", $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || printf '0 '
  done
}

# wrk: warm-up, then measured; prints requests/s. The CPU each daemon spent
# per request in the measured run goes to $S/cpu.last as "slurmrestd
# slurmctld slurmd munged" (µs).
wrk_rps() {
  local out before after n
  wrk -t2 -c"$CONNS" -d2s "$@" >/dev/null 2>&1 || true
  before="$(ticks)"
  out="$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "$@" 2>"$S/wrk.err")" ||
    die "wrk failed: $(cat "$S/wrk.err")"
  after="$(ticks)"
  n="$(awk '/requests in/ {print $1}' <<<"$out")"
  awk -v b="$before" -v a="$after" -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    k = split(b, x, " "); split(a, y, " ")
    for (i = 1; i <= k; i++) printf("%s%.0f", (i > 1 ? "," : ""), (n > 0 ? (y[i] - x[i]) * 1e6 / hz / n : 0))
    print "" }' >"$S/cpu.last"
  echo "$out" >>"$S/wrk.log"
  if grep -q 'HTTP' "$S/wrk.err"; then
    log "wrk $*: failed responses:"
    head -5 "$S/wrk.err" >&2
  fi
  awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out"
}

log "submit: slurmrestd, two runs (${SECS} s each)"
submit1="$(wrk_rps -s bench/wrk/slurm-submit.lua "$URL/slurm/v0.0.38/job/submit")"
cpu_submit1="$(cat "$S/cpu.last")"
submit2="$(wrk_rps -s bench/wrk/slurm-submit.lua "$URL/slurm/v0.0.38/job/submit")"
cpu_submit2="$(cat "$S/cpu.last")"
submit=$(((submit1 + submit2) / 2))
njobs="$(squeue -h -t all -o %i | wc -l)"
log "read by id: slurmrestd over the $njobs submitted jobs (${SECS} s)"
squeue -h -t all -o %i | sed 's|^|/slurm/v0.0.38/job/|' >"$S/paths"
read="$(BENCH_PATHS="$S/paths" wrk_rps -s bench/wrk/slurm-get.lua "$URL")"
cpu_read="$(cat "$S/cpu.last")"

if [[ -n "$OUT" ]]; then
  echo "submit=$submit read=$read jobs=$njobs runs=$submit1,$submit2" \
    "cpu_submit=$cpu_submit1 cpu_submit2=$cpu_submit2 cpu_read=$cpu_read" >"$OUT"
else
  echo "slurmrestd 22.05 (v0.0.38, JWT), wrk -t2 -c$CONNS, ${SECS} s: submit $submit req/s ($submit1, $submit2), read by id $read req/s ($njobs jobs)"
  echo "CPU per request, µs (slurmrestd,slurmctld,slurmd,munged): submit $cpu_submit1 and $cpu_submit2; read $cpu_read"
fi
