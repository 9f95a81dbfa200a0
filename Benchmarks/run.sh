#!/usr/bin/env bash
# `make bench` / `make bench-quick`: installs what the benchmarks need (h2load,
# nghttpd, wrk, a Python venv with aioapns and matplotlib), builds Islet in release
# mode, and runs Benchmarks/bench.py, which writes bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh nghttp2-client nghttp2-server wrk python3-venv openssl
echo "building (release) …"
swift build -c release --product islet >/dev/null
swift build -c release --product islet-bench >/dev/null
venv=.build/bench-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q aioapns==4.0 matplotlib >/dev/null
# A PostgreSQL server of its own for the run, durable like SQLite's FULL sync.
ISLET_POSTGRES_DURABLE=1 exec ./scripts/with-postgres.sh "$venv/bin/python" Benchmarks/bench.py "$@"
