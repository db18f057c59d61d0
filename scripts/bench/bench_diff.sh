#!/usr/bin/env bash
# `porttool diff` of a model against `porttool simplify` of it (issue 53's figure): wall time and
# peak RSS (/usr/bin/time %M) of the structural diff and of the diff with --html, beside the
# memory bound the issue sets: the peaks of `porttool inspect A` and `inspect B` plus twice the
# two models' bytes. Then a renamed-only copy (every node and intermediate tensor renamed with
# python3-onnx), which must report no differences. Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_diff.sh
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   MODEL         model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_diff: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_diff: $MODEL absent; nothing to measure" >&2; exit 0; }

measure() {  # ARGS... -> "RSS_KB SECONDS EXIT"
  local rc=0
  /usr/bin/time -f '%M %e' -o "$WORK/time.txt" "$BIN" "$@" -q >/dev/null 2>"$WORK/err.txt" ||
    rc=$?
  echo "$(cat "$WORK/time.txt" | tail -1) $rc"
}

B="$WORK/simplified.onnx"
"$BIN" simplify "$MODEL" -o "$B" -q >/dev/null
read -r ia _ _ <<<"$(measure inspect "$MODEL")"
read -r ib _ _ <<<"$(measure inspect "$B")"
bytes=$(($(stat -c %s "$MODEL") + $(stat -c %s "$B")))
bound=$((ia + ib + 2 * bytes / 1024))
read -r d_kb d_s d_rc <<<"$(measure diff "$MODEL" "$B")"
read -r h_kb h_s h_rc <<<"$(measure diff "$MODEL" "$B" --html "$WORK/diff.html")"

echo "$BIN: diff $(basename "$MODEL") against its simplification"
printf '%-28s %10s %8s %5s\n' run "RSS MB" seconds exit
printf '%-28s %10.1f %8s %5s\n' "inspect A" "$(echo "$ia / 1024" | bc -l)" - -
printf '%-28s %10.1f %8s %5s\n' "inspect B" "$(echo "$ib / 1024" | bc -l)" - -
printf '%-28s %10.1f %8s %5s\n' "diff A B" "$(echo "$d_kb / 1024" | bc -l)" "$d_s" "$d_rc"
printf '%-28s %10.1f %8s %5s\n' "diff A B --html" "$(echo "$h_kb / 1024" | bc -l)" "$h_s" "$h_rc"
printf 'memory bound (inspect A + inspect B + 2 x %.1f MB of models): %.1f MB; diff uses %.0f%%\n' \
  "$(echo "$bytes / 1048576" | bc -l)" "$(echo "$bound / 1024" | bc -l)" \
  "$(echo "100 * $d_kb / $bound" | bc -l)"
"$BIN" diff "$MODEL" "$B" --json -q 2>/dev/null |
  /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin); s = d["summary"]
print("nodes A %d, B %d: matched %d, removed %d, added %d, changed %d, weights changed %d" % (
    s["nodes_a"], s["nodes_b"], s["matched"], s["removed"], s["added"], s["changed"],
    s["values_changed"]))
print("every node accounted for:", s["matched"] + s["removed"] == s["nodes_a"] and
      s["matched"] + s["added"] == s["nodes_b"])' || true

# A renamed-only copy: no differences expected (exit 0).
/usr/bin/python3 - "$MODEL" "$WORK/renamed.onnx" <<'PY' || { echo "bench_diff: no python3-onnx"; exit 0; }
import sys, onnx
m = onnx.load(sys.argv[1]); g = m.graph
keep = {v.name for v in g.input} | {v.name for v in g.output}
r = lambda s: s if not s or s in keep else "renamed." + s
for k, n in enumerate(g.node):
    n.name = "n%d" % k
    n.input[:] = [r(s) for s in n.input]
    n.output[:] = [r(s) for s in n.output]
for t in g.initializer: t.name = r(t.name)
for v in g.value_info: v.name = r(v.name)
onnx.save(m, sys.argv[2])
PY
read -r r_kb r_s r_rc <<<"$(measure diff "$MODEL" "$WORK/renamed.onnx")"
printf 'renamed copy: %.1f MB, %s s, exit %s (0: no differences)\n' \
  "$(echo "$r_kb / 1024" | bc -l)" "$r_s" "$r_rc"
