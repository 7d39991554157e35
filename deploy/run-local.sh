#!/usr/bin/env bash
# deploy/run-local.sh — `make run`: a local gpugate on 127.0.0.1:8080.
#
# Installs what is missing, builds, starts (or reuses) a PostgreSQL cluster
# under ./var, migrates, applies the reference-architecture example, starts
# the Cloud Batch emulator as the local Batch backend and serves. Everything
# it creates lives in ./var and is kept between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh
make -j2 build/gpugate build/batch_emulator

mkdir -p var
chmod 755 var
uri=$(tests/pg.sh start var/pg)
tests/pg.sh createdb var/pg gpugate >/dev/null
if [ ! -s var/hs256.secret ]; then
  (umask 077; head -c 48 /dev/urandom | base64 | tr -d '\n=+/' | head -c 48 > var/hs256.secret)
fi
if [ ! -s var/pubsub.secret ]; then
  (umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n=+/' > var/pubsub.secret)
fi

export GPUGATE_DATABASE_URL="${uri%/*}/gpugate"
export GPUGATE_JWT_HS256_SECRET_FILE="$PWD/var/hs256.secret"
export GPUGATE_LISTEN="${GPUGATE_LISTEN:-127.0.0.1:8080}"

# The Batch emulator (tests/emulator): capacity per region and provisioning
# model, one-minute jobs, state changes pushed to gpugate like Pub/Sub. It
# exits when this process (which becomes gpugate) does.
emu_port="${GPUGATE_EMULATOR_PORT:-8081}"
if [ "${GPUGATE_BATCH_BACKEND:-gcp}" = gcp ] && [ -z "${GPUGATE_BATCH_ENDPOINT:-}" ]; then
  EMU_LISTEN="127.0.0.1:$emu_port" EMU_EXIT_WITH_PARENT=true \
  EMU_CAPACITY="${EMU_CAPACITY:-us-central1/RESERVATION_BOUND=16,us-central1/STANDARD=32,us-central1/SPOT=64,us-central1/FLEX_START=20,us-east4/FLEX_START=20,europe-west4/FLEX_START=20}" \
  EMU_RUN_MS="${EMU_RUN_MS:-60000}" EMU_PROJECT=local-project \
  EMU_PUSH_URL="http://$GPUGATE_LISTEN/v1/batch/notifications?token=$(cat var/pubsub.secret)" \
    build/batch_emulator >> var/batch-emulator.log 2>&1 &
  export GPUGATE_BATCH_BACKEND=gcp
  export GPUGATE_GCP_PROJECT=local-project
  export GPUGATE_BATCH_ENDPOINT="http://127.0.0.1:$emu_port"
  export GCE_METADATA_HOST="127.0.0.1:$emu_port"
  export GPUGATE_PUBSUB_PUSH_SECRET_FILE="$PWD/var/pubsub.secret"
  batch_line="Batch emulator on http://127.0.0.1:$emu_port (log: var/batch-emulator.log)"
else
  batch_line="GPUGATE_BATCH_BACKEND=${GPUGATE_BATCH_BACKEND:-none} ${GPUGATE_BATCH_ENDPOINT:-}"
fi

build/gpugate migrate
build/gpugate apply deploy/examples/reference-architecture.json

admin=$(build/gpugate token --role admin --ttl 86400)
member=$(build/gpugate token --team team-a --role member --ttl 86400)
cat <<MSG

gpugate is starting on http://$GPUGATE_LISTEN
  PostgreSQL:   $GPUGATE_DATABASE_URL (data in ./var/pg)
  Batch:        $batch_line
  admin token:  $admin
  team-a token: $member

Try:
  curl -s -H "Authorization: Bearer $admin" http://$GPUGATE_LISTEN/v1/cluster-queues

Stop with Ctrl-C. Make new tokens with:
  GPUGATE_JWT_HS256_SECRET_FILE=var/hs256.secret build/gpugate token --team team-a --role member
MSG
exec build/gpugate serve
