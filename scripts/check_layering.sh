#!/usr/bin/env bash
# The layering check (ctest `layering`): DESIGN.md's arrows
#   tools -> stages -> passes . quant . emit . decide -> runtime -> analysis -> shape -> ir -> io -> util
# A folder's code may include only its own folder and folders to its right; passes, quant, emit and
# decide are peers and may not include each other. The build enforces the same chain at link time
# (one static library per folder, each linking only the folders to its right); this check catches
# a wrong-way #include even where it would still link (inline code, a header-only use). Test files
# may include a collaborator above them (docs/DESIGN-NOTES.md, "Tests that hand in
# collaborators"), so *_test.cc and the test-only headers are not checked; nor are scaffold-op's
# templates (lib/emit/templates/), the code of generated packages rather than porttool's.
#   scripts/check_layering.sh [SOURCE_DIR]     exit 1 and one line per violation when any
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# One pass over every include (grep), judged by awk: rank of a folder in the chain, peers sharing
# a rank (6) and not allowed to include each other.
files=$(find lib passes tools \( -name '*.cc' -o -name '*.h' \) | grep -Ev '_test\.cc$|/testing\.h$|/test_fixtures\.h$|_test_util\.h$|^tools/fuzz/|^lib/emit/templates/' | sort)
if [ -z "$files" ]; then
  echo "layering: no source files under $root (wrong directory?)" >&2
  exit 1
fi
# shellcheck disable=SC2086
grep -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(lib/[a-z_]+|passes|tools)/' $files |
  awk -v checked="$(echo "$files" | wc -l)" '
    function folder(path) {
      if (path ~ /^lib\//) { split(path, p, "/"); return "lib/" p[2] }
      if (path ~ /^passes\//) return "passes"
      if (path ~ /^tools\//) return "tools"
      return ""
    }
    function rank(f) {
      if (f == "lib/util") return 0; if (f == "lib/io") return 1; if (f == "lib/ir") return 2
      if (f == "lib/shape") return 3; if (f == "lib/analysis") return 4; if (f == "lib/runtime") return 5
      if (f == "passes" || f == "lib/quant" || f == "lib/emit" || f == "lib/decide") return 6
      if (f == "lib/stages") return 7; if (f == "tools") return 8
      return -1
    }
    {
      file = substr($0, 1, index($0, ":") - 1)
      inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
      from = folder(file); to = folder(inc)
      if (from == to || rank(from) < 0) next
      if (rank(to) > rank(from) || (rank(to) == rank(from) && rank(to) == 6)) {
        printf "layering: %s includes %s (%s may use only folders to its right: DESIGN.md)\n", file, inc, from
        bad++
      }
    }
    END {
      if (bad) { printf "layering: %d include(s) against DESIGN.md'"'"'s arrows in %d files\n", bad, checked; exit 1 }
      printf "layering: %d files follow DESIGN.md'"'"'s arrows\n", checked
    }'
