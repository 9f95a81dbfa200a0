#!/usr/bin/env bash
# The simulator's ceiling: h2load sends the same valid APNs request (an alert push
# with a provider token) to nghttpd, to Islet's bare HTTP/2 server and to `islet sim`,
# over 1 and 4 TLS connections, in one run; prints requests per second and ratios.
# Each figure is the median of three rounds, the servers taking turns within a round,
# so that a burst of load from elsewhere on the machine does not decide a ratio.
# Usage: Benchmarks/sim-vs-nghttpd.sh [requests per run, default 200000]
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-200000}
./scripts/install-deps.sh nghttp2-client nghttp2-server
swift build -c release --product islet >/dev/null
swift build -c release --product islet-bench >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/server.key" \
  -out "$work/server.pem" -days 2 -subj /CN=localhost 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
mkdir -p "$work/docroot"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; return 1; }

nghttpd_port=$(free_port)
nghttpd -d "$work/docroot" "$nghttpd_port" "$work/server.key" "$work/server.pem" >/dev/null 2>&1 &
pids+=($!)
bare_port=$(free_port)
.build/release/islet-bench h2-server --port "$bare_port" --cert "$work/server.pem" --key "$work/server.key" >/dev/null &
pids+=($!)
sim_port=$(free_port)
.build/release/islet sim --quiet --port "$sim_port" --inspect-port 0 --cert "$work/server.pem" --key "$work/server.key" \
  --trust "BENCHKEY01:BENCHTEAM1:$work/AuthKey.p8" >/dev/null &
pids+=($!)
wait_port "$nghttpd_port"; wait_port "$bare_port"; wait_port "$sim_port"

jwt=$(.build/release/islet jwt --key "$work/AuthKey.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1)
token=$(printf 'ab%.0s' $(seq 32))
printf '{"aps":{"alert":{"title":"Order","body":"On its way"}}}' > "$work/body.json"

rate() {  # port connections -> requests per second
  h2load -n "$requests" -c "$2" -m 100 -d "$work/body.json" \
    -H "authorization: bearer $jwt" -H "apns-topic: com.example.app" -H "apns-push-type: alert" \
    "https://127.0.0.1:$1/3/device/$token" 2>/dev/null | awk '/^finished in/ { print $4 }'
}

median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

printf '%-12s %-22s %12s %10s\n' connections server "requests/s" "÷ nghttpd"
for connections in 1 4; do
  bases=(); bares=(); sims=()
  for _ in 1 2 3; do
    bases+=("$(rate "$nghttpd_port" "$connections")")
    bares+=("$(rate "$bare_port" "$connections")")
    sims+=("$(rate "$sim_port" "$connections")")
  done
  base=$(median "${bases[@]}"); bare=$(median "${bares[@]}"); sim=$(median "${sims[@]}")
  for row in "nghttpd:$base" "islet HTTP/2 (bare):$bare" "islet sim:$sim"; do
    name=${row%%:*}; value=${row##*:}
    awk -v c="$connections" -v n="$name" -v v="$value" -v b="$base" 'BEGIN { printf "%-12s %-22s %12.0f %10.2f\n", c, n, v, v / b }'
  done
done
