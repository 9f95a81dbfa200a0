#!/usr/bin/env bash
# `make test-sanitize`: builds the suite with one sanitizer (address or thread) in a
# build folder of its own and runs it; any report fails the run. With --build-only
# (second argument) it builds and stops (CI builds ahead while other stages run).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:?usage: test-sanitize.sh address|thread [--build-only]}
build_only=0
if [ "${2:-}" = --build-only ]; then build_only=1; fi
build=.build/sanitize-$sanitizer
here=$(pwd)
# Reports go to files (one per process, children included), so that a report is
# seen even when the process that made it cannot print it or hangs afterwards.
reports="$here/$build/reports"
rm -rf "$reports"
mkdir -p "$reports"
case "$sanitizer" in
  address)
    # Leaks of allocations made once per process (caches, type metadata) are not
    # bugs; everything else is. halt_on_error stops at the first report.
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=0:detect_stack_use_after_return=0:suppressions=$here/scripts/sanitizers/asan.supp:log_path=$reports/asan"
    ;;
  thread)
    export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp:log_path=$reports/tsan"
    ;;
  *) echo "test-sanitize: unknown sanitizer $sanitizer (address or thread)" >&2; exit 2 ;;
esac
# The build holds the suites where this sanitizer's errors live (Package.swift's
# ISLET_SANITIZER_SCOPE: the C edges, the transport, the stores and a whole server's
# life under both; the fuzz corpora under AddressSanitizer, the loops under
# ThreadSanitizer); the suites that only drive HTTP are left to `make test`.
export ISLET_SANITIZER_SCOPE=$sanitizer
# The tiers those suites need: PostgreSQL, the Python peers, child processes.
export ISLET_TEST_TIERS=postgres,python,processes
# Deadlines in the tests (eventually, the raw client's receive timeout) four times
# their usual length: the suite runs several times slower here, hundreds of tests
# sharing two cores (IsletTesting.TestTime).
export ISLET_TEST_TIME_SCALE=4
# At most 8 tests at a time (make test's runs take 16, scripts/test-passes.sh): with
# every test at once, hundreds of sanitized tests share two cores and the
# concurrency pool's two threads, each stretches to minutes (past its time limit),
# and the whole run is slower: under TSan, 128 s at 8 against more than 300 s (and
# a one-minute limit overrun) at full width, on the same machine.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}
# The configuration's flags (WHOLE_MODULE=1: a module at a time, scripts/build-mode.sh);
# the runs below name the same, to find what this build made.
mode=$(./scripts/build-mode.sh)
echo "test-sanitize: building with the $sanitizer sanitizer in $build"
# shellcheck disable=SC2086 # EXTRA_SWIFT_FLAGS and mode hold several words
swift build --build-tests $mode --sanitize="$sanitizer" --build-path "$build" ${WERROR:+-Xswiftc -warnings-as-errors} \
  ${EXTRA_SWIFT_FLAGS:-}
if [ "$build_only" -eq 1 ]; then exit 0; fi
# Any report file fails the run, and is shown whole.
show_reports() {
  local found=0
  for report in "$reports"/*; do
    [ -e "$report" ] || continue
    found=1
    echo "test-sanitize: report in $report:" >&2
    cat "$report" >&2
  done
  return $found
}
status=0
echo "test-sanitize: running the suite under the $sanitizer sanitizer"
# Both runs share one throwaway PostgreSQL server. Deadlines, so that a stuck
# process fails the run instead of stalling it.
./scripts/with-postgres.sh bash -c '
  sanitizer=$1 build=$2 mode=$3 status=0
  timeout --kill-after=30 1500 swift test --skip-build $mode --sanitize="$sanitizer" --build-path "$build" || status=$?
  if [ "$status" -eq 0 ]; then
    ISLET_THREAD_CENSUS=1 timeout --kill-after=30 300 \
      swift test --skip-build $mode --sanitize="$sanitizer" --build-path "$build" --filter ThreadCensusTests || status=$?
  fi
  exit "$status"
' test-sanitize "$sanitizer" "$build" "$mode" || status=$?
show_reports || status=1
if [ "$status" -ne 0 ]; then echo "test-sanitize: the $sanitizer run failed (status $status)" >&2; fi
exit "$status"
