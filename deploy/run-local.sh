#!/usr/bin/env bash
# deploy/run-local.sh — `make run`: a local gpugate on 127.0.0.1:8080.
#
# Installs what is missing, builds, starts (or reuses) a PostgreSQL cluster
# under ./var, migrates, applies the reference-architecture example and
# serves. Everything it creates lives in ./var and is kept between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh
make -j2 build/gpugate

mkdir -p var
chmod 755 var
uri=$(tests/pg.sh start var/pg)
tests/pg.sh createdb var/pg gpugate >/dev/null
if [ ! -s var/hs256.secret ]; then
  (umask 077; head -c 48 /dev/urandom | base64 | tr -d '\n=+/' | head -c 48 > var/hs256.secret)
fi

export GPUGATE_DATABASE_URL="${uri%/*}/gpugate"
export GPUGATE_JWT_HS256_SECRET_FILE="$PWD/var/hs256.secret"
export GPUGATE_LISTEN="${GPUGATE_LISTEN:-127.0.0.1:8080}"

build/gpugate migrate
build/gpugate apply deploy/examples/reference-architecture.json

admin=$(build/gpugate token --team platform --role admin --ttl 86400)
member=$(build/gpugate token --team team-a --role member --ttl 86400)
cat <<MSG

gpugate is starting on http://$GPUGATE_LISTEN
  PostgreSQL:   $GPUGATE_DATABASE_URL (data in ./var/pg)
  Batch:        GPUGATE_BATCH_BACKEND=${GPUGATE_BATCH_BACKEND:-none} (admitted jobs are not dispatched)
  admin token:  $admin
  team-a token: $member

Try:
  curl -s -H "Authorization: Bearer $admin" http://$GPUGATE_LISTEN/v1/cluster-queues

Stop with Ctrl-C. Make new tokens with:
  GPUGATE_JWT_HS256_SECRET_FILE=var/hs256.secret build/gpugate token --team team-a --role member
MSG
exec build/gpugate serve
