#!/usr/bin/env bash
# Usage: ci-failures.sh LOG
#
# What a failed CI stage's log says went wrong, short enough to read in CI's last
# lines (.ci/run prints it after the stage times):
#   - the failing tests: Swift Testing's `✘ Test name() recorded an issue at
#     File.swift:12:5: …` and `✘ Test name() failed after …` (with the first issue's
#     place), XCTest's `Test Case 'Suite.name' failed`, and the tests a run left
#     running when it passed its deadline (scripts/test-passes.sh lists them);
#   - when no test is named, the first `error:` lines (a build that failed, an XCTest
#     assertion);
#   - the first lines of each sanitizer report (`==…==ERROR: AddressSanitizer`,
#     `WARNING: ThreadSanitizer`, a fuzz target's `ERROR: libFuzzer`, up to its
#     `SUMMARY:` line), and every distinct `SUMMARY: …Sanitizer` (or libFuzzer) line.
# Each line it prints starts with "ci: "; it prints nothing when the log names none
# of these.
set -euo pipefail
log=${1:?usage: ci-failures.sh LOG}
[ -r "$log" ] || { echo "ci-failures: cannot read $log" >&2; exit 2; }
# Lines of each sanitizer report shown, and reports shown at most (the same report
# is often printed twice: to its file, then shown by scripts/test-sanitize.sh).
report_lines=${CI_REPORT_LINES:-30}
reports_shown=${CI_REPORTS_SHOWN:-3}
tests_shown=50

awk -v report_lines="$report_lines" -v reports_shown="$reports_shown" -v tests_shown="$tests_shown" '
  function add_test(name, where) {
    sub(/ with [0-9]+ test cases?$/, "", name)
    if (name == "" || (name in seen)) { if (where != "" && (name in seen) && place[name] == "") place[name] = where; return }
    seen[name] = 1
    order[++tests] = name
    place[name] = where
  }
  # Swift Testing: "✘ Test name() recorded an issue at F.swift:1:2: …" and
  # "✘ Test name() failed after 1.0 seconds …" (not "✘ Test run with …").
  index($0, "✘ Test ") {
    rest = substr($0, index($0, "✘ Test ") + length("✘ Test "))
    if (index(rest, "run with ") == 1) next
    cut = index(rest, " recorded an issue")
    if (cut > 0) {
      where = substr(rest, cut + length(" recorded an issue"))
      if (index(where, " at ") == 1) {
        where = substr(where, 5)
        colon = index(where, ": ")
        if (colon > 0) where = substr(where, 1, colon - 1)
      } else {
        where = ""
      }
      add_test(substr(rest, 1, cut - 1), where)
      next
    }
    cut = index(rest, " failed")
    if (cut > 0) add_test(substr(rest, 1, cut - 1), "")
    next
  }
  # XCTest: "Test Case '\''Suite.name'\'' failed (0.01 seconds)".
  /Test Case '\''.*'\'' failed/ {
    rest = substr($0, index($0, "Test Case '\''") + 11)
    add_test(substr(rest, 1, index(rest, "'\''") - 1), "")
    next
  }
  # scripts/test-passes.sh, after a run passed its deadline: one name a line.
  /tests started and not ended:$/ { unfinished = 1; next }
  unfinished {
    if ($0 == "" || index($0, "== ") == 1 || index($0, "test-passes:") == 1) { unfinished = 0 }
    else { add_test($0, "did not end"); next }
  }
  # A sanitizer report: its first lines, up to its SUMMARY.
  /==ERROR: AddressSanitizer|==ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|==ERROR: UndefinedBehaviorSanitizer|ERROR: libFuzzer/ {
    in_report = 0
    if (reports < reports_shown + 0) { reports++; in_report = 1; report_left = report_lines; reports_text = reports_text "ci: sanitizer report " reports ":\n" }
    else { reports_skipped++ }
  }
  in_report {
    reports_text = reports_text "ci:   " $0 "\n"
    if ($0 ~ /SUMMARY: .*(Sanitizer|libFuzzer)/) in_report = 0
    else if (--report_left <= 0) { reports_text = reports_text "ci:   …\n"; in_report = 0 }
  }
  /SUMMARY: .*(Sanitizer|libFuzzer)/ {
    summary = $0
    sub(/^.*SUMMARY: /, "SUMMARY: ", summary)
    if (!(summary in summaries)) { summaries[summary] = 1; summary_order[++summary_count] = summary }
  }
  / error: |^error: / {
    line = $0
    if (!(line in error_seen) && errors < 20) { error_seen[line] = 1; error_lines[++errors] = line }
  }
  END {
    if (tests > 0) {
      print "ci: failing tests (" tests "):"
      for (i = 1; i <= tests && i <= tests_shown; i++) {
        name = order[i]
        print "ci:   " name (place[name] == "" ? "" : " (" place[name] ")")
      }
      if (tests > tests_shown) print "ci:   … and " (tests - tests_shown) " more"
    } else if (errors > 0) {
      print "ci: first errors:"
      for (i = 1; i <= errors; i++) print "ci:   " error_lines[i]
    }
    if (reports > 0) {
      printf "%s", reports_text
      if (reports_skipped > 0) print "ci: … and " reports_skipped " more sanitizer report(s)"
    }
    if (summary_count > 0) {
      print "ci: sanitizer and fuzzer summaries:"
      for (i = 1; i <= summary_count; i++) print "ci:   " summary_order[i]
    }
  }
' "$log"
