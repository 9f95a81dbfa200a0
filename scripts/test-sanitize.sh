#!/usr/bin/env bash
# `make test-sanitize`: builds the suite with one sanitizer (address or thread) in a
# build folder of its own and runs it; any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:?usage: test-sanitize.sh address|thread}
build=.build/sanitize-$sanitizer
here=$(pwd)
case "$sanitizer" in
  address)
    # Leaks of allocations made once per process (caches, type metadata) are not
    # bugs; everything else is. halt_on_error stops at the first report.
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=0:detect_stack_use_after_return=0:suppressions=$here/scripts/sanitizers/asan.supp"
    ;;
  thread)
    export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp"
    ;;
  *) echo "test-sanitize: unknown sanitizer $sanitizer (address or thread)" >&2; exit 2 ;;
esac
echo "test-sanitize: building with the $sanitizer sanitizer in $build"
swift build --build-tests --sanitize="$sanitizer" --build-path "$build" ${WERROR:+-Xswiftc -warnings-as-errors}
echo "test-sanitize: running the suite under the $sanitizer sanitizer"
swift test --skip-build --sanitize="$sanitizer" --build-path "$build"
ISLET_THREAD_CENSUS=1 swift test --skip-build --sanitize="$sanitizer" --build-path "$build" --filter ThreadCensusTests
