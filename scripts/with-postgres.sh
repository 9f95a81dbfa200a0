#!/usr/bin/env bash
# Runs CMD [ARGS…] with a throwaway PostgreSQL server: `ISLET_TEST_POSTGRES_URL`
# names it (a superuser, `islet`, trusted on 127.0.0.1) and `ISLET_TEST_POSTGRES_PORT`
# its port. The server lives in a fresh temporary folder and is stopped and removed
# when CMD ends, however it ends; the script exits with CMD's status.
#
# When ISLET_TEST_POSTGRES_URL is already set, CMD runs against that server instead.
#
# The server trusts every local and 127.0.0.1 connection except the role
# `islet_password` (password `islet-secret`), which must give its password
# (scram-sha-256) over TCP, so that tests can check a refused password.
# It is tuned for speed, not durability: fsync and synchronous commits are off,
# unless ISLET_POSTGRES_DURABLE=1 (the benchmarks) keeps PostgreSQL's defaults.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: with-postgres.sh CMD [ARGS…]" >&2
  exit 2
fi
if [ -n "${ISLET_TEST_POSTGRES_URL:-}" ]; then
  exec "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-deps.sh" postgresql python3

# shellcheck source=scripts/postgres-common.sh
source "$here/postgres-common.sh"

folder=$(mktemp -d "${TMPDIR:-/tmp}/islet-postgres.XXXXXX")
data="$folder/data"
log="$folder/server.log"
started=0
cleanup() {
  if [ "$started" -eq 1 ]; then
    as_server_user "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$folder"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

give_to_server_user "$folder"
as_server_user "$bin/initdb" -D "$data" -U islet --auth=trust --encoding=UTF8 --locale=C --no-sync >"$folder/initdb.log" 2>&1 || {
  cat "$folder/initdb.log" >&2
  echo "with-postgres: initdb failed" >&2
  exit 1
}
# The password role first: pg_hba.conf's first matching line wins.
cat >"$data/pg_hba.conf" <<'EOF'
# TYPE  DATABASE  USER            ADDRESS       METHOD
local   all       all                           trust
host    all       islet_password  127.0.0.1/32  scram-sha-256
host    all       all             127.0.0.1/32  trust
EOF
# The suite runs its tests at once, each server with a pool and a listener of its
# own (and the multi-node tests' processes with theirs): room for them all.
cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$folder'
max_connections = 1000
shared_buffers = 128MB
EOF
# For tests, speed; for benchmarks (ISLET_POSTGRES_DURABLE=1), every commit synced,
# as SQLite's FULL sync does.
if [ -z "${ISLET_POSTGRES_DURABLE:-}" ]; then
  cat >>"$data/postgresql.conf" <<EOF
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
fi

# A port found free may be taken before the server binds it: try a few.
port=""
for attempt in 1 2 3; do
  candidate=$(free_port)
  if as_server_user "$bin/pg_ctl" -D "$data" -w -t 60 -o "-p $candidate" -l "$log" start >/dev/null 2>&1; then
    port=$candidate
    started=1
    break
  fi
  # A server that failed to start may still be shutting down; make sure it is gone.
  as_server_user "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
done
if [ -z "$port" ]; then
  cat "$log" >&2 || true
  echo "with-postgres: the server did not start" >&2
  exit 1
fi

psql_local() {
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$folder" -p "$port" -U islet -d postgres "$@"
}
psql_local -c "CREATE ROLE islet_password LOGIN PASSWORD 'islet-secret'"
version=$(psql_local -Atc "SHOW server_version")
echo "with-postgres: PostgreSQL $version on 127.0.0.1:$port" >&2

export ISLET_TEST_POSTGRES_URL="postgresql://islet@127.0.0.1:$port/postgres"
export ISLET_TEST_POSTGRES_PORT="$port"
# The same server over its Unix socket, as a node on the database's own machine
# would reach it.
export ISLET_TEST_POSTGRES_SOCKET_URL="postgresql://islet@/postgres?host=$folder&port=$port"
status=0
"$@" || status=$?
exit "$status"
