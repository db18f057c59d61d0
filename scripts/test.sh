#!/usr/bin/env bash
# The README's test command: install dependencies (ONNX Runtime for node included, as the
# reference in comparisons), build everything, run every test suite under ctest, then list every
# test that skipped and why — a skipped comparison is reported, never silent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --ort --browser --aarch64
scripts/build.sh
cd build
rc=0
ctest --output-on-failure -j"$(nproc)" || rc=$?
# gtest skips happen inside a ctest test, so ctest's own summary does not show them: list each
# skipped test with the reason it printed (the line before gtest's "[  SKIPPED ] Name (N ms)").
# A whole ctest entry that skips (runtime_aarch64) prints "NAME: skipped, REASON" instead.
skipped=$(awk '/^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)/ { print "  " $4 ": " prev }
               /^[A-Za-z0-9_]+: skipped, / { print "  " $0 } { prev = $0 }' \
  Testing/Temporary/LastTest.log 2>/dev/null || true)
echo
if [ -n "$skipped" ]; then
  echo "skipped tests: $(echo "$skipped" | wc -l) (PORTTOOL_REQUIRE_ORACLES=1 turns a missing oracle," \
    "tool or shared model into a failure):"
  echo "$skipped"
else
  echo "skipped tests: 0"
fi
exit $rc
