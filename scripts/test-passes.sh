#!/usr/bin/env bash
# `make test`'s runs of the built suite, one after another (or side by side, see
# one_at_a_time), against one throwaway PostgreSQL server (scripts/with-postgres.sh),
# every tier enabled:
#
#   sqlite      the whole suite (the store contracts on both backends, the rest
#               on SQLite) but the OpenAPI conformance run;
#   postgresql  the service, delivery and API suites again with every store on
#               PostgreSQL (ISLET_TEST_BACKEND), less the suites that run on
#               PostgreSQL whatever the backend (the same work twice). The OpenAPI
#               conformance run (schemathesis, the longest suite) runs here only:
#               the API's answers do not depend on the backend, but the stricter
#               backend refuses what the other lets by (U+0000 in text, integer
#               bounds), which is what fuzzing every field finds;
#   census      ThreadCensusTests alone in its process, where counting the
#               process's threads is exact;
#   memory      BodyMemoryTests alone in its process, where its resident memory
#               is its own.
#
# None builds (--skip-build), so none needs SwiftPM's lock on .build, which would
# otherwise hold runs side by side one after another (--ignore-lock). Each writes
# its own log, shown whole once it ends, with its time; the
# script fails if any run failed. SWIFT_TEST_FLAGS adds flags to every run (the
# sanitizer build's --build-path and --sanitize).
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
flags=${SWIFT_TEST_FLAGS:-}
export ISLET_TEST_TIERS=${ISLET_TEST_TIERS:-all}
# At most 16 tests of a run at once (Swift Testing starts them all otherwise): with
# hundreds interleaved on two cores, each test's own deadlines measured mostly the
# others' work (a trivial test's median time in a run under load: 18 s at full
# width, 5 s at 16), and the run took no less time.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-16}

if [ -z "${ISLET_TEST_POSTGRES_URL:-}" ]; then
  exec ./scripts/with-postgres.sh "$0" "$@"
fi

postgres_suites='IsletServiceTests|DeliveryTests|IsletServerTests'
postgres_only='MultiNodeTests|TwoNodeApplicationTests'
conformance='OpenAPIConformanceTests'
logs=$(mktemp -d)
pids=()
# Interrupted (Ctrl-C, CI's deadline), the runs stop too, before the database does.
stop_runs() {
  local file
  for file in "$logs"/*.pid; do [ -e "$file" ] && kill_tree "$(cat "$file")"; done
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
}
trap 'stop_runs; exit 130' INT TERM
trap 'rm -rf "$logs"' EXIT
set -m

names=(sqlite postgresql census memory)
# Each run has a deadline (ISLET_TEST_PASS_SECONDS, default 1200), so that a test
# that never ends fails the run, naming the tests started and not ended, instead of
# stalling it. `swift test` runs the test binary in a process group of its own,
# so a run is stopped by killing `swift test` and its children by pid.
deadline=${ISLET_TEST_PASS_SECONDS:-1200}
kill_tree() {
  local pid=$1 child
  for child in $(pgrep -P "$pid" 2>/dev/null); do kill_tree "$child"; done
  kill -KILL "$pid" 2>/dev/null || true
}
# One run at a time unless ISLET_TEST_PASSES_SIDE_BY_SIDE=1: side by side they
# took 165 s against 181 s one after another (with a busy process beside them),
# and in CI the idle core is already the sanitizer builds' (.ci/run).
one_at_a_time() {
  if [ "${ISLET_TEST_PASSES_SIDE_BY_SIDE:-0}" != 1 ]; then wait "${pids[-1]}" || true; fi
}
run() {
  local name=$1
  shift
  local began late=0
  began=$(date +%s)
  "$@" >"$logs/$name.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$logs/$name.pid"
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(( $(date +%s) - began )) -ge "$deadline" ]; then
      late=1
      kill_tree "$pid"
      break
    fi
    sleep 1
  done
  wait "$pid"
  local status=$?
  if [ "$late" -eq 1 ]; then
    status=124
    {
      echo
      echo "test-passes: the $name run passed its deadline of $deadline s; tests started and not ended:"
      comm -23 \
        <(sed -n 's/^.*◇ Test \(.*\) started\.$/\1/p' "$logs/$name.log" | sort -u) \
        <(sed -n 's/^.*Test \(.*\) \(passed\|failed\) after.*$/\1/p' "$logs/$name.log" | sort -u)
    } >>"$logs/$name.log"
  fi
  echo "$status $(( $(date +%s) - began ))" >"$logs/$name.status"
  return "$status"
}
# shellcheck disable=SC2086
run sqlite $swift test --skip-build --ignore-lock $flags --skip "$conformance" &
pids+=($!)
one_at_a_time
# shellcheck disable=SC2086
run postgresql env ISLET_TEST_BACKEND=postgresql $swift test --skip-build --ignore-lock $flags \
  --filter "$postgres_suites" --skip "$postgres_only" &
pids+=($!)
one_at_a_time
# shellcheck disable=SC2086
run census env ISLET_THREAD_CENSUS=1 $swift test --skip-build --ignore-lock $flags --filter ThreadCensusTests &
pids+=($!)
one_at_a_time
# shellcheck disable=SC2086
run memory env ISLET_BODY_MEMORY=1 $swift test --skip-build --ignore-lock $flags --filter BodyMemoryTests &
pids+=($!)
one_at_a_time

failed=()
for i in "${!names[@]}"; do
  wait "${pids[$i]}"
  name=${names[$i]}
  status=1 took='?'
  [ -e "$logs/$name.status" ] && read -r status took <"$logs/$name.status"
  echo "== test pass $name: status $status after $took s"
  cat "$logs/$name.log"
  echo "== test pass $name: status $status after $took s"
  [ "$status" -eq 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-passes: failed: ${failed[*]}" >&2
  exit 1
fi
