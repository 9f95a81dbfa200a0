#!/usr/bin/env bash
# A persistent local PostgreSQL for trying Islet on it, in .build/dev-postgres.
#
#   scripts/dev-postgres.sh          starts it (creating it the first time) and
#                                    prints the --database URL to give islet serve
#   scripts/dev-postgres.sh stop     stops it (the data stays)
#   scripts/dev-postgres.sh status   says whether it runs
#
# PORT= picks the TCP port (5432 by default). It listens on 127.0.0.1 only and
# trusts every local connection; the superuser is `islet` and the database `islet`.
# Unlike the throwaway server of with-postgres.sh, it keeps PostgreSQL's durable
# defaults. Remove the folder to start again from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-start}
port=${PORT:-5432}
./scripts/install-deps.sh postgresql

# shellcheck source=scripts/postgres-common.sh
source scripts/postgres-common.sh

folder="$(pwd)/.build/dev-postgres"
data="$folder/data"
log="$folder/server.log"

running() { as_server_user "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

case "$action" in
  start)
    if [ ! -f "$data/PG_VERSION" ]; then
      mkdir -p "$folder"
      give_to_server_user "$folder"
      echo "dev-postgres: creating a cluster in $data" >&2
      as_server_user "$bin/initdb" -D "$data" -U islet --auth=trust --encoding=UTF8 --locale=C >"$folder/initdb.log" 2>&1 || {
        cat "$folder/initdb.log" >&2
        echo "dev-postgres: initdb failed" >&2
        exit 1
      }
      cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$folder'
CONF
    fi
    if running; then
      echo "dev-postgres: already running" >&2
    elif ! as_server_user "$bin/pg_ctl" -D "$data" -w -t 60 -o "-p $port" -l "$log" start >/dev/null; then
      cat "$log" >&2 || true
      echo "dev-postgres: the server did not start (is port $port taken? try PORT=…)" >&2
      exit 1
    fi
    # The port the server runs on (it may have been started earlier with another).
    port=$(sed -n 4p "$data/postmaster.pid")
    url="postgresql://islet@127.0.0.1:$port/islet"
    exists=$("$bin/psql" -X -Atq -h "$folder" -p "$port" -U islet -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'islet'")
    if [ "$exists" != "1" ]; then
      "$bin/psql" -X -q -h "$folder" -p "$port" -U islet -d postgres -c "CREATE DATABASE islet" >/dev/null
    fi
    echo "dev-postgres: running on 127.0.0.1:$port (log in $log)" >&2
    echo "--database $url"
    ;;
  stop)
    if running; then
      as_server_user "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
      echo "dev-postgres: stopped" >&2
    else
      echo "dev-postgres: not running" >&2
    fi
    ;;
  status)
    if running; then
      echo "dev-postgres: running, --database postgresql://islet@127.0.0.1:$(sed -n 4p "$data/postmaster.pid")/islet"
    else
      echo "dev-postgres: not running"
      exit 3
    fi
    ;;
  *)
    echo "usage: dev-postgres.sh [start|stop|status]" >&2
    exit 2
    ;;
esac
