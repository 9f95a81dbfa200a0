# Shared by with-postgres.sh and dev-postgres.sh (sourced, not run): where Debian's
# PostgreSQL binaries are, and how to run them as an unprivileged user.
#
# The server refuses to run as root. As root, it runs as the `postgres` system user
# that Debian's package creates; otherwise as whoever runs the script.

# The newest installed major version's binaries (initdb, pg_ctl, psql).
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "postgres: no PostgreSQL server binaries under /usr/lib/postgresql (install the postgresql package)" >&2
  exit 1
fi

# Runs a command as the server's user.
as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Makes a folder the server's user's own.
give_to_server_user() {
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$1"
  fi
}

# A TCP port on 127.0.0.1 that nothing listens on at the moment.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
