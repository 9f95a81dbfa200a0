#!/usr/bin/env bash
# `make test`'s runs of the built suite, side by side against one throwaway
# PostgreSQL server (scripts/with-postgres.sh), every tier enabled:
#
#   sqlite      the whole suite: the store contracts on both backends, the rest
#               on SQLite;
#   postgresql  the service, delivery and API suites again with every store on
#               PostgreSQL (ISLET_TEST_BACKEND), less the suites that run on
#               PostgreSQL whatever the backend (the same work twice) and the
#               OpenAPI conformance run: it holds the API to its document, which
#               the backend does not change, and takes longer than everything
#               else (the backends are held to one contract by the store suites,
#               which run on both);
#   census      ThreadCensusTests alone in its process, where counting the
#               process's threads is exact;
#   memory      BodyMemoryTests alone in its process, where its resident memory
#               is its own.
#
# The runs share the machine (the suite waits for conditions, never for fixed
# times); none builds (--skip-build), so none needs SwiftPM's lock on .build,
# which would otherwise run them one after another (--ignore-lock). Each writes
# its own log, shown whole once it ends, with its time; the
# script fails if any run failed. SWIFT_TEST_FLAGS adds flags to every run (the
# sanitizer build's --build-path and --sanitize).
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
flags=${SWIFT_TEST_FLAGS:-}
export ISLET_TEST_TIERS=${ISLET_TEST_TIERS:-all}

if [ -z "${ISLET_TEST_POSTGRES_URL:-}" ]; then
  exec ./scripts/with-postgres.sh "$0" "$@"
fi

postgres_suites='IsletServiceTests|DeliveryTests|IsletServerTests'
once='MultiNodeTests|TwoNodeApplicationTests|OpenAPIConformanceTests'
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

names=(sqlite postgresql census memory)
pids=()
run() {
  local name=$1
  shift
  local began
  began=$(date +%s)
  # shellcheck disable=SC2086
  ( "$@" ) >"$logs/$name.log" 2>&1
  local status=$?
  echo "$status $(( $(date +%s) - began ))" >"$logs/$name.status"
  return "$status"
}
# shellcheck disable=SC2086
run sqlite $swift test --skip-build --ignore-lock $flags &
pids+=($!)
# shellcheck disable=SC2086
run postgresql env ISLET_TEST_BACKEND=postgresql $swift test --skip-build --ignore-lock $flags \
  --filter "$postgres_suites" --skip "$once" &
pids+=($!)
# shellcheck disable=SC2086
run census env ISLET_THREAD_CENSUS=1 $swift test --skip-build --ignore-lock $flags --filter ThreadCensusTests &
pids+=($!)
# shellcheck disable=SC2086
run memory env ISLET_BODY_MEMORY=1 $swift test --skip-build --ignore-lock $flags --filter BodyMemoryTests &
pids+=($!)

failed=()
for i in "${!names[@]}"; do
  wait "${pids[$i]}"
  name=${names[$i]}
  read -r status took <"$logs/$name.status"
  echo "== test pass $name: status $status after $took s"
  cat "$logs/$name.log"
  echo "== test pass $name: status $status after $took s"
  [ "$status" -eq 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-passes: failed: ${failed[*]}" >&2
  exit 1
fi
