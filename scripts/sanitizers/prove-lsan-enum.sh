#!/usr/bin/env bash
# Shows the LeakSanitizer limitation that Fuzz/lsan-suppressions.txt works around:
# the enum-held global is reported as a direct leak, the class-held one is not.
set -euo pipefail
cd "$(dirname "$0")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
swiftc -sanitize=address lsan-enum-payload.swift -o "$scratch/enum" 2>/dev/null
swiftc -sanitize=address -DCLASS_REFERENCE lsan-enum-payload.swift -o "$scratch/class" 2>/dev/null
for kind in enum class; do
  echo "a value held by a global ($kind build):"
  report=$(ASAN_OPTIONS=detect_leaks=1 "$scratch/$kind" 2>&1 >/dev/null || true)
  grep -E "SUMMARY" <<<"$report" || echo "  no leak reported"
done
