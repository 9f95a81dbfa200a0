#!/usr/bin/env bash
# The flags every build of the suite takes (`make test`, `make screenshots`,
# scripts/test-sanitize.sh), so that each finds the others' builds as they left them:
#
# - the compiler does not re-check the LLVM IR it has just made (the check finds
#   faults of the compiler, never of the code, and took about 40% of the suite's
#   compiling: 449 CPU-seconds with it, 267 without, side by side on one machine);
# - with WHOLE_MODULE=1 (CI sets it), a module at a time: the release configuration
#   with optimisation off (-Onone), testing enabled and DEBUG defined, which is what
#   the debug configuration gives, each module type-checked and compiled by one
#   compiler process instead of one per batch of its files. From nothing (CI's clean
#   clone) that is about a quarter less compiling: 346 CPU-seconds against 469.
#   An edit-and-test loop keeps the debug configuration, which recompiles only what
#   changed.
set -euo pipefail
flags="-Xswiftc -Xfrontend -Xswiftc -disable-llvm-verify"
if [ "${WHOLE_MODULE:-0}" = 1 ]; then
  flags="-c release -Xswiftc -Onone -Xswiftc -enable-testing -Xswiftc -DDEBUG $flags"
fi
echo "$flags"
