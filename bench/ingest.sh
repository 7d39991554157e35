#!/usr/bin/env bash
# bench/ingest.sh — billing-export ingestion throughput and memory (not a
# test; `make bench` runs it, see bench/README.md).
#
# Generates a synthetic Cloud Billing export of BENCH_INGEST_ROWS rows
# (default 1,000,000; ≈ 1.3 KB a row) in a temporary directory, starts a
# throwaway PostgreSQL there (tests/pg.sh), applies the migrations, then
# times, each after a CHECKPOINT:
#
#   floor   psql \copy of the same file into a one-column text table: the
#           cost of just getting the bytes into PostgreSQL;
#   new     build/gpugate ingest-billing FILE into empty tables;
#   again   the same file once more: every row a duplicate;
#   bq      `gpugate billing-sync` of BENCH_BQ_ROWS rows (default 1,000,000:
#           100 days × 10,000) from build/bigquery_emulator (pages of
#           10,000 rows) into empty tables, beside bq-floor, psql \copy of
#           the very same rows (the emulator's dump) into a text table;
#           BENCH_BQ_PAIRS (default 3) pairs of them, one after the other,
#           and the median of the pairs' ratios.
#
# BENCH_INGEST_ONLY=bq runs only the BigQuery row (and no FOCUS export).
# BENCH_GPUGATE=PATH pulls with another gpugate binary (e.g. a copy of
# main's build, to compare two builds back to back on a shared host).
#
# and prints rows, seconds, rows/s, MB/s, the command's peak RSS and CPU
# time (getrusage of the waited process, as /usr/bin/time -v reports them)
# and the CPU time the whole cluster used meanwhile. The cluster and the
# file are removed at the end. Then bench/focus.sh times the FOCUS export
# of a year of rollups.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${BENCH_INGEST_ROWS:-1000000}
bq_rows=${BENCH_BQ_ROWS:-1000000}
bq_days=100
make -s build/gpugate build/bench_ingest build/bigquery_emulator

work=$(mktemp -d /tmp/gpugate-bench.XXXXXX)
chmod 755 "$work" # tests/pg.sh: the postgres user must reach the cluster
cleanup() {
  [ -z "${emu_pid:-}" ] || kill "$emu_pid" 2>/dev/null || true
  tests/pg.sh stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

only=${BENCH_INGEST_ONLY:-}
file="$work/export.ndjson"
if [ "$only" != bq ]; then
  echo "bench/ingest: generating $rows rows ..." >&2
  build/bench_ingest gen "$file" "$rows"
  bytes=$(stat -c %s "$file")
fi

uri=$(tests/pg.sh start "$work/pg" 2>"$work/pg-start.log") || {
  cat "$work/pg-start.log" >&2
  exit 1
}
tests/pg.sh createdb "$work/pg" bench
db="${uri%/*}/bench"
psql=(psql "$db" -X -q -v ON_ERROR_STOP=1)
export GPUGATE_DATABASE_URL="$db" GPUGATE_MIGRATE_ON_START=false
build/gpugate migrate >"$work/migrate.log" 2>&1 || {
  cat "$work/migrate.log" >&2
  exit 1
}

postmaster=$(head -n 1 "$work/pg/data/postmaster.pid")

# run NAME CMD...: time CMD (stdout to $work/NAME.out) into $work/NAME.time:
# "seconds peak-RSS-KiB exit client-CPU-s server-CPU-s", the last being
# what the whole cluster used meanwhile (backends, WAL writer, checkpoints)
run() {
  local name=$1 before after
  shift
  "${psql[@]}" -c CHECKPOINT
  before=$(build/bench_ingest cpu "$postmaster")
  build/bench_ingest run "$work/$name.out" -- "$@" >"$work/$name.time"
  sleep 0.2 # the command's backends exit and are waited for
  after=$(build/bench_ingest cpu "$postmaster")
  read -r _ _ status _ <"$work/$name.time"
  if [ "$status" -ne 0 ]; then
    echo "bench/ingest: $name failed (exit $status)" >&2
    cat "$work/$name.out" >&2
    exit 1
  fi
  echo "$(<"$work/$name.time") $(awk -v a="$after" -v b="$before" \
    'BEGIN { printf "%.2f", a - b }')" >"$work/$name.time"
}

# row LABEL NAME ROWS: one line of the table
row() {
  local seconds rss client server
  read -r seconds rss _ client server <"$work/$2.time"
  awk -v l="$1" -v r="$3" -v s="$seconds" -v k="$rss" -v b="$bytes" \
    -v n="$rows" -v c="$client" -v p="$server" 'BEGIN {
      printf "%-31s %8d %7.2f %8.0f %6.1f %7.1f %7.2f %7.2f\n", l, r, s,
             r / s, b * (r / n) / s / 1e6, k / 1024, c, p }'
}

# count NAME KEY: an integer field of gpugate's report
count() {
  grep -oE "\"$2\": *[0-9]+" "$work/$1.out" | grep -oE '[0-9]+$'
}

if [ "$only" != bq ]; then
  echo "bench/ingest: psql \\copy (floor) ..." >&2
  "${psql[@]}" -c "CREATE TABLE raw_lines (line text)"
  run floor "${psql[@]}" -c "\\copy raw_lines FROM '$file' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
  "${psql[@]}" -c "DROP TABLE raw_lines"

  echo "bench/ingest: gpugate ingest-billing, new rows ..." >&2
  run new build/gpugate ingest-billing "$file"
  echo "bench/ingest: gpugate ingest-billing, the same file again ..." >&2
  run again build/gpugate ingest-billing "$file"

  inserted=$(count new inserted)
  dups=$(count again duplicates)
  if [ "$inserted" -ne "$rows" ] || [ "$dups" -ne "$rows" ]; then
    echo "bench/ingest: expected $rows inserted then $rows duplicates," \
      "got $inserted and $dups" >&2
    exit 1
  fi

  printf 'ingest: %d rows, %.0f bytes/row, %d cores, %s\n' "$rows" \
    "$((bytes / rows))" "$(nproc)" "$("${psql[@]}" -t -A -c 'SHOW server_version')"
  printf '%-31s %8s %7s %8s %6s %7s %7s %7s\n' "" "" "" "" "" "peak" "client" "server"
  printf '%-31s %8s %7s %8s %6s %7s %7s %7s\n' "" rows seconds rows/s MB/s "RSS MiB" "CPU s" "CPU s"
  row 'psql \copy, one text column' floor "$rows"
  row 'gpugate ingest-billing (new)' new "$inserted"
  row 'gpugate ingest-billing (again)' again "$dups"
fi

# ---- the BigQuery pull: the emulator's rows, pulled, against \copy of them,
# in BENCH_BQ_PAIRS pairs (default 3), floor then pull, each pair in a
# database of its own that is dropped after it (its autovacuum must not run
# into the next pair). An untimed \copy comes first: a fresh cluster makes
# (and zero-fills) its WAL segments during the first gigabyte written, which
# the floor of a first pair would pay and its pull, recycling them, would
# not. On two cores one run moves by a fifth from the next; the ratio
# reported is the median of the pairs'.
pairs=${BENCH_BQ_PAIRS:-3}
per_day=$((bq_rows / bq_days))
bq_rows=$((per_day * bq_days))
# BQ_EMU_PRERENDER: the emulator renders its rows once, before it listens,
# and sends pages from them (tests/emulator/bq_rendered.h), so that its
# share of the two cores is sending stored rows, as BigQuery serves them
# from elsewhere, not generating them anew (0.6 CPU-s a million rows).
export BQ_EMU_DAYS=$bq_days BQ_EMU_ROWS=$per_day BQ_EMU_PAGE_ROWS=10000 \
  BQ_EMU_INCOMPLETE_POLLS=0 BQ_EMU_PRERENDER=1
echo "bench/ingest: BigQuery pull of $bq_rows rows: dumping them ..." >&2
build/bigquery_emulator dump >"$work/bq.ndjson"
bytes=$(stat -c %s "$work/bq.ndjson")
rows=$bq_rows
BQ_EMU_PORT_FILE="$work/bq.port" build/bigquery_emulator 2>"$work/bq-emu.log" &
emu_pid=$!
for _ in $(seq 1200); do [ -s "$work/bq.port" ] && break; sleep 0.05; done
[ -s "$work/bq.port" ] || {
  echo "bench/ingest: the BigQuery emulator did not start" >&2
  cat "$work/bq-emu.log" >&2
  exit 1
}
if [ "$only" = bq ]; then
  printf '%-31s %8s %7s %8s %6s %7s %7s %7s\n' "" "" "" "" "" "peak" "client" "server"
  printf '%-31s %8s %7s %8s %6s %7s %7s %7s\n' "" rows seconds rows/s MB/s "RSS MiB" "CPU s" "CPU s"
fi
echo "bench/ingest: psql \\copy of them, untimed (the cluster's WAL) ..." >&2
"${psql[@]}" -c "CREATE TABLE raw_lines (line text)"
"${psql[@]}" -c "\\copy raw_lines FROM '$work/bq.ndjson' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
"${psql[@]}" -c "DROP TABLE raw_lines"
for k in $(seq "$pairs"); do
  tests/pg.sh createdb "$work/pg" "bq$k" >/dev/null
  db="${uri%/*}/bq$k"
  psql=(psql "$db" -X -q -v ON_ERROR_STOP=1)
  GPUGATE_DATABASE_URL="$db" build/gpugate migrate >"$work/migrate-bq.log" 2>&1
  "${psql[@]}" -c "CREATE TABLE raw_lines (line text)"
  echo "bench/ingest: pair $k of $pairs: psql \\copy of them (floor) ..." >&2
  run "bq-floor-$k" "${psql[@]}" -c "\\copy raw_lines FROM '$work/bq.ndjson' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
  "${psql[@]}" -c "DROP TABLE raw_lines"
  echo "bench/ingest: pair $k of $pairs: gpugate billing-sync from the emulator ..." >&2
  GPUGATE_DATABASE_URL="$db" GPUGATE_GCP_TOKEN_SOURCE=none \
    GPUGATE_BILLING_BIGQUERY_TABLE=bench.billing.export \
    GPUGATE_BIGQUERY_ENDPOINT="http://127.0.0.1:$(cat "$work/bq.port")" \
    run "bq-$k" "${BENCH_GPUGATE:-build/gpugate}" billing-sync
  pulled=$(count "bq-$k" rows_read)
  if [ "$pulled" -ne "$bq_rows" ]; then
    echo "bench/ingest: the pull stored $pulled rows, not $bq_rows" >&2
    exit 1
  fi
  psql "${uri%/*}/postgres" -X -q -v ON_ERROR_STOP=1 \
    -c "DROP DATABASE \"bq$k\" WITH (FORCE)"
  row "psql \\copy of the pulled rows" "bq-floor-$k" "$bq_rows"
  row "gpugate billing-sync (BigQuery)" "bq-$k" "$pulled"
done
rm -f "$work/bq.ndjson"
for k in $(seq "$pairs"); do
  read -r floor_s _ <"$work/bq-floor-$k.time"
  read -r bq_s bq_rss _ <"$work/bq-$k.time"
  echo "$floor_s $bq_s $bq_rss"
done | awk '{ printf "%.4f %.1f %d %.2f\n", $1 / $2, $3 / 1024, NR, $1 / $2 }' |
  sort -n | awk '{ r[NR] = $1; if ($2 > k) k = $2; p[$3] = $4 }
  END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        for (i = 1; i <= NR; i++) s = s sprintf("%s%.2f", i > 1 ? ", " : "", p[i])
        printf "BigQuery pull ÷ \\copy floor: %.2f, the median of %d pairs (%s) (goal >= 0.8), peak RSS %.1f MiB (goal <= 64)\n",
               m, NR, s, k }'

# the FOCUS export of a year of rollups (a cluster and a server of its own)
[ "$only" = bq ] || bench/focus.sh
