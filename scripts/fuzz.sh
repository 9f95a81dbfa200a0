#!/usr/bin/env bash
# Builds each libFuzzer target (Fuzz/) with -sanitize=fuzzer,address and runs it for
# FUZZ_SECONDS (default 60) on a scratch copy of its corpus (Fuzz/Corpus/<Name>), one
# target at a time. New inputs stay in the scratch folder (.build/fuzz/work/<Name>);
# a crash, hang or leak leaves its input in .build/fuzz/work/<Name>/artifacts/ and
# makes the script fail. Prints, per target, the executions and executions a second.
#
#   scripts/fuzz.sh                 every target
#   scripts/fuzz.sh JSON Simulator  only these
#   FUZZ_SECONDS=30 scripts/fuzz.sh
#   scripts/fuzz.sh --build-only    build every target, run none (CI builds ahead)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
build=.build/fuzz
work=$build/work

# name max_len timeout(s) rss_limit(MB)
targets=(
  "JSON 4096 5 2048"
  "RequestBody 8192 10 3072"
  "Simulator 6144 10 2048"
  "HTTP2Server 4096 30 2048"
  "APNsClient 2048 30 2048"
  "SwiftSchema 8192 10 2048"
  "Credentials 4096 10 2048"
)

# See the file for why Data buffers are left out of leak reports.
export LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan-suppressions.txt:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

build_only=0
if [[ "${1:-}" == --build-only ]]; then
  build_only=1
  shift
fi
selected=("$@")
wanted() {
  [[ ${#selected[@]} -eq 0 ]] && return 0
  local name
  for name in "${selected[@]}"; do [[ "$name" == "$1" ]] && return 0; done
  return 1
}

summary=()
failed=0
for entry in "${targets[@]}"; do
  read -r name max_len timeout rss <<<"$entry"
  wanted "$name" || continue
  product=Fuzz$name
  mkdir -p "$work"
  echo "== $product: building"
  # shellcheck disable=SC2086 # EXTRA_SWIFT_FLAGS holds several words (see the Makefile)
  swift build --build-path "$build" --product "$product" ${EXTRA_SWIFT_FLAGS:-} \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING >"$work.$name.build.log" 2>&1 \
    || { cat "$work.$name.build.log"; echo "$product: build failed"; exit 1; }
  if [[ $build_only -eq 1 ]]; then continue; fi
  binary=$(swift build --build-path "$build" --show-bin-path)/$product

  rm -rf "${work:?}/$name"
  mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
  cp Fuzz/Corpus/"$name"/* "$work/$name/corpus/"
  log=$work/$name/fuzz.log
  echo "== $product: fuzzing for $seconds s (max_len $max_len, timeout $timeout s, rss limit $rss MB)"
  status=0
  "$binary" "$work/$name/corpus" -max_total_time="$seconds" -print_final_stats=1 \
    -max_len="$max_len" -timeout="$timeout" -rss_limit_mb="$rss" \
    -artifact_prefix="$work/$name/artifacts/" >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  corpus=$(ls "$work/$name/corpus" | wc -l)
  if [[ $status -ne 0 ]] || [[ -n "$(ls "$work/$name/artifacts")" ]]; then
    failed=1
    grep -E 'ERROR|Fatal error|SUMMARY|Test unit written' "$log" | head -20 || true
    summary+=("$(printf '%-12s FAILED  %10s runs  %7s exec/s  artifacts in %s' "$name" "$runs" "$rate" "$work/$name/artifacts")")
  else
    summary+=("$(printf '%-12s ok      %10s runs  %7s exec/s  corpus %s' "$name" "$runs" "$rate" "$corpus")")
  fi
done

if [[ $build_only -eq 1 ]]; then exit 0; fi
echo
echo "== fuzz summary ($seconds s each)"
printf '%s\n' "${summary[@]}"
exit $failed
