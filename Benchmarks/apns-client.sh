#!/usr/bin/env bash
# APNs client throughput: Islet's APNs client, h2load (the limit) and aioapns (a peer
# from PyPI) send the same alert push to the same `islet sim`, over 1 and 4 TLS
# connections, in one run. Also the client's peak memory after 100k and after 1M
# pushes (it must stay flat).
# Usage: Benchmarks/apns-client.sh [pushes per run, default 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
pushes=${1:-100000}
./scripts/install-deps.sh nghttp2-client python3-venv time
swift build -c release --product islet >/dev/null
swift build -c release --product islet-bench >/dev/null
venv=.build/bench-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q aioapns==4.0 >/dev/null

work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
.build/release/islet sim --quiet --port "$port" --inspect-port 0 --ca-out "$work/ca.pem" \
  --trust "BENCHKEY01:BENCHTEAM1:$work/AuthKey.p8" >/dev/null &
sim_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done

jwt=$(.build/release/islet jwt --key "$work/AuthKey.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1)
printf '{"aps":{"alert":{"title":"Order","body":"On its way"}}}' > "$work/body.json"
token=$(printf 'ab%.0s' $(seq 32))

islet() {  # connections count -> pushes per second
  .build/release/islet-bench apns-client --url "https://localhost:$port" --ca "$work/ca.pem" --key "$work/AuthKey.p8" \
    --key-id BENCHKEY01 --team-id BENCHTEAM1 --connections "$1" --count "$2" --concurrency 1000 | sed 's/.*pushes_per_second=\([0-9]*\).*/\1/'
}
limit() {
  h2load -n "$pushes" -c "$1" -m 100 -d "$work/body.json" --header "authorization: bearer $jwt" \
    --header "apns-topic: com.example.app" --header "apns-push-type: alert" \
    "https://localhost:$port/3/device/$token" 2>/dev/null | awk '/^finished in/ { printf "%d", $4 }'
}
peer() {  # aioapns is far slower; a tenth of the pushes gives a steady rate
  "$venv/bin/python" Benchmarks/aioapns_peer.py localhost "$port" "$work/ca.pem" "$work/AuthKey.p8" BENCHKEY01 BENCHTEAM1 \
    "$1" $((pushes / 10)) 1000 2>/dev/null | sed 's/.*pushes_per_second=\([0-9]*\).*/\1/'
}

printf '%-12s %12s %12s %12s %14s %14s\n' connections islet h2load aioapns "islet÷h2load" "islet÷aioapns"
for connections in 1 4; do
  i=$(islet "$connections" "$pushes"); h=$(limit "$connections"); a=$(peer "$connections")
  awk -v c="$connections" -v i="$i" -v h="$h" -v a="$a" \
    'BEGIN { printf "%-12s %12d %12d %12d %14.2f %14.2f\n", c, i, h, a, i / h, i / a }'
done

rss() {  # pushes -> peak RSS in MB of the client process
  /usr/bin/time -f '%M' .build/release/islet-bench apns-client --url "https://localhost:$port" --ca "$work/ca.pem" \
    --key "$work/AuthKey.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1 --connections 1 --count "$1" 2>&1 >/dev/null | tail -1 \
    | awk '{ printf "%.1f", $1 / 1024 }'
}
echo "client peak RSS: $(rss 100000) MB after 100k pushes, $(rss 1000000) MB after 1M pushes"
