#!/usr/bin/env bash
# tests/pg.sh — a throwaway PostgreSQL 15 cluster for the tests and `make run`.
#
#   tests/pg.sh start DIR          create the cluster if DIR has none, start it,
#                                  print its URI on stdout
#   tests/pg.sh stop DIR           fast shutdown; no error if not running
#   tests/pg.sh uri DIR            print the URI
#   tests/pg.sh createdb DIR NAME  create database NAME unless it exists
#
# Layout of DIR: data/ (the cluster), port (the TCP port, chosen once at
# random among free ports below the kernel's ephemeral range, so from
# 20000-32767 by default, and reused on restart), log (server
# log), .s.PGSQL.PORT (the Unix socket), .lock.
#
# The server listens on 127.0.0.1 only, trusts every local connection, and
# trades durability for speed (fsync, synchronous_commit, full_page_writes
# off). Never point it at data you care about.
#
# initdb refuses to run as root: as root, DIR is owned by the `postgres`
# system user and the server runs as that user (runuser), so every parent
# directory of DIR must be searchable by it (/tmp/... or the repo's var/ are;
# /root/... or a mktemp -d directory are not).
#
# PG_BINDIR overrides where the PostgreSQL binaries are.
set -euo pipefail

PROG="tests/pg.sh"
PG_USER=postgres

die() {
  echo "$PROG: $*" >&2
  exit 1
}

usage() {
  cat >&2 <<EOF
usage: $PROG start DIR | stop DIR | uri DIR | createdb DIR NAME
EOF
  exit 2
}

# Keep the caller's libpq settings from leaking into our commands.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
  PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGSSLMODE PGCONNECT_TIMEOUT
export LC_ALL=C

find_bindir() {
  local d
  for d in "${PG_BINDIR:-}" /usr/lib/postgresql/15/bin; do
    if [[ -n "$d" && -x "$d/pg_ctl" && -x "$d/initdb" ]]; then
      echo "$d"
      return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir 2>/dev/null || true)"
    if [[ -n "$d" && -x "$d/pg_ctl" && -x "$d/initdb" ]]; then
      echo "$d"
      return 0
    fi
  fi
  die "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/15/bin" \
    "and pg_config --bindir); run deploy/install-deps.sh"
}

BINDIR=""
AS_ROOT=0
if [[ "$(id -u)" -eq 0 ]]; then AS_ROOT=1; fi

# Run a PostgreSQL server program as the cluster's owner. Started from / so
# that an unreadable current directory (e.g. /root) does not bother it, and
# with fd 9 (our lock) closed so that the postmaster does not inherit it.
as_owner() {
  if ((AS_ROOT)); then
    (cd / && runuser -u "$PG_USER" -- "$@") 9>&-
  else
    "$@" 9>&-
  fi
}

# Absolute, normalised path of $1 (which need not exist).
abspath() {
  local p="$1"
  [[ "$p" == /* ]] || p="$PWD/$p"
  realpath -m -- "$p"
}

# As root: every existing ancestor of DIR must be searchable by postgres.
check_traversable() {
  local dir="$1" p
  ((AS_ROOT)) || return 0
  id -u "$PG_USER" >/dev/null 2>&1 ||
    die "system user '$PG_USER' does not exist (install the postgresql" \
      "package: deploy/install-deps.sh)"
  command -v runuser >/dev/null 2>&1 || die "runuser not found (util-linux)"
  p="$dir"
  local parents=()
  while [[ "$p" != / ]]; do
    p="$(dirname -- "$p")"
    parents=("$p" "${parents[@]}")
  done
  for p in "${parents[@]}"; do
    [[ -d "$p" ]] || break
    if ! (cd / && runuser -u "$PG_USER" -- test -x "$p"); then
      die "the '$PG_USER' user cannot enter $p (mode $(stat -c %A -- "$p")," \
        "owner $(stat -c %U -- "$p")), so it cannot run a cluster in $dir;" \
        "use a directory under /tmp or the repository's var/ instead"
    fi
  done
}

# Make DIR exist, owned by the cluster's owner when we are root.
prepare_dir() {
  local dir="$1"
  check_traversable "$dir"
  (umask 022 && mkdir -p -- "$dir")
  [[ -d "$dir" ]] || die "$dir is not a directory"
  if ((AS_ROOT)); then
    chown "$PG_USER:" -- "$dir"
    if [[ -e "$dir/log" ]]; then chown "$PG_USER:" -- "$dir/log"; fi
    (cd / && runuser -u "$PG_USER" -- test -w "$dir" -a -x "$dir") ||
      die "the '$PG_USER' user cannot write to $dir"
  fi
}

lock_dir() {
  exec 9>>"$1/.lock"
  flock 9
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Below the kernel's ephemeral range (ip_local_port_range): a port in that
# range can be taken as the source port of any outgoing connection while
# the cluster is down, and its restart on the same port would then fail.
pick_port() {
  local i p lo=20000 hi=32767 eph
  if eph="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)" &&
    [[ "$eph" =~ ^[0-9]+$ ]] && ((eph > lo + 1000)); then
    hi=$((eph - 1))
  fi
  for ((i = 0; i < 100; i++)); do
    p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
    if ! port_in_use "$p"; then
      echo "$p"
      return 0
    fi
  done
  die "no free TCP port found in $lo-$hi"
}

uri_for() {
  echo "postgresql://postgres@127.0.0.1:$1/postgres"
}

read_port() {
  local dir="$1" port
  [[ -f "$dir/port" ]] || die "no cluster in $dir (run: $PROG start $dir)"
  port="$(<"$dir/port")"
  [[ "$port" =~ ^[0-9]+$ ]] || die "$dir/port does not hold a port number"
  echo "$port"
}

is_running() {
  local dir="$1"
  [[ -f "$dir/data/PG_VERSION" ]] || return 1
  as_owner "$BINDIR/pg_ctl" status -D "$dir/data" >/dev/null 2>&1
}

# postgresql.conf string literal.
conf_quote() {
  printf "'%s'" "${1//\'/\'\'}"
}

# Settings owned by this script, rewritten at every start (the port and the
# socket directory may change).
write_conf() {
  local dir="$1" port="$2" tmp
  tmp="$(mktemp "$dir/data/.gpugate-test.conf.XXXXXX")"
  cat >"$tmp" <<EOF
# Written by tests/pg.sh at every start; edits are lost.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = $(conf_quote "$dir")
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  chmod 0644 "$tmp"
  if ((AS_ROOT)); then chown "$PG_USER:" "$tmp"; fi
  mv -f "$tmp" "$dir/data/gpugate-test.conf"
}

init_cluster() {
  local dir="$1" out
  echo "$PROG: creating cluster in $dir/data" >&2
  if ! out="$(as_owner "$BINDIR/initdb" -D "$dir/data" -A trust -U postgres \
    --no-sync -E UTF8 --locale=C --no-instructions 2>&1)"; then
    echo "$out" >&2
    die "initdb failed"
  fi
  echo "include_if_exists = 'gpugate-test.conf'" >>"$dir/data/postgresql.conf"
}

cmd_start() {
  local dir port fresh=0 attempt out
  dir="$(abspath "$1")"
  # A Unix socket path is limited to 107 bytes: DIR/.s.PGSQL.NNNNN
  ((${#dir} <= 90)) || die "$dir is too long for a Unix socket directory"
  [[ "$dir" != *[[:space:]]* ]] || die "DIR must not contain white space"
  prepare_dir "$dir"
  lock_dir "$dir"

  if [[ ! -f "$dir/data/PG_VERSION" ]]; then
    init_cluster "$dir"
  fi

  if is_running "$dir"; then
    port="$(read_port "$dir")"
    uri_for "$port"
    return 0
  fi

  if [[ -f "$dir/port" ]]; then
    port="$(read_port "$dir")"
    if port_in_use "$port"; then
      echo "$PROG: port $port is taken by another program; choosing another" >&2
      port="$(pick_port)"
      fresh=1
    fi
  else
    port="$(pick_port)"
    fresh=1
  fi

  for ((attempt = 1; ; attempt++)); do
    echo "$port" >"$dir/port"
    write_conf "$dir" "$port"
    if out="$(as_owner "$BINDIR/pg_ctl" start -w -t 60 -D "$dir/data" \
      -l "$dir/log" 2>&1)"; then
      break
    fi
    # Lost a race for a freshly picked port: try another one.
    if ((fresh && attempt < 5)) &&
      tail -n 20 "$dir/log" 2>/dev/null | grep -q 'Address already in use'; then
      port="$(pick_port)"
      continue
    fi
    echo "$out" >&2
    echo "--- last lines of $dir/log:" >&2
    tail -n 20 "$dir/log" >&2 2>/dev/null || true
    die "could not start PostgreSQL in $dir"
  done
  uri_for "$port"
}

cmd_stop() {
  local dir out
  dir="$(abspath "$1")"
  [[ -f "$dir/data/PG_VERSION" ]] || return 0
  lock_dir "$dir"
  is_running "$dir" || return 0
  if ! out="$(as_owner "$BINDIR/pg_ctl" stop -w -t 60 -m fast \
    -D "$dir/data" 2>&1)"; then
    is_running "$dir" || return 0
    echo "$out" >&2
    die "could not stop PostgreSQL in $dir"
  fi
}

cmd_uri() {
  local dir port
  dir="$(abspath "$1")"
  port="$(read_port "$dir")"
  uri_for "$port"
}

cmd_createdb() {
  local dir="$1" name="$2" port exists out
  dir="$(abspath "$dir")"
  [[ -n "$name" ]] || die "empty database name"
  port="$(read_port "$dir")"
  is_running "$dir" || die "the cluster in $dir is not running (run: $PROG start $dir)"
  local conn=(-h 127.0.0.1 -p "$port" -U postgres)
  exists="$("$BINDIR/psql" "${conn[@]}" -d postgres -X -q -t -A \
    -v ON_ERROR_STOP=1 -v name="$name" <<<"SELECT 1 FROM pg_database WHERE datname = :'name';")"
  [[ "$exists" == 1 ]] && return 0
  if ! out="$("$BINDIR/createdb" "${conn[@]}" -- "$name" 2>&1)"; then
    # Someone else may have created it meanwhile.
    exists="$("$BINDIR/psql" "${conn[@]}" -d postgres -X -q -t -A \
      -v ON_ERROR_STOP=1 -v name="$name" <<<"SELECT 1 FROM pg_database WHERE datname = :'name';")"
    [[ "$exists" == 1 ]] && return 0
    echo "$out" >&2
    die "could not create database $name"
  fi
}

main() {
  (($# >= 2)) || usage
  local cmd="$1"
  BINDIR="$(find_bindir)"
  case "$cmd:$#" in
  start:2) cmd_start "$2" ;;
  stop:2) cmd_stop "$2" ;;
  uri:2) cmd_uri "$2" ;;
  createdb:3) cmd_createdb "$2" "$3" ;;
  *) usage ;;
  esac
}

main "$@"
