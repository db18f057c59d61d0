#!/usr/bin/env bash
# Foundation benchmark: porttool check / infer-shapes / inspect against python onnx 1.12
# (onnx.load, checker.check_model, shape_inference.infer_shapes) on a ~1.5 GB model with inline
# weights and the same model with external data, in the same run. Prints wall time and peak RSS
# (/usr/bin/time -v) side by side with ratios. Never fails on time.
#   scripts/bench/bench_foundation.sh [PORTTOOL_BIN] [SIZE_MB]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${1:-$ROOT/build/porttool}"
SIZE_MB="${2:-1536}"
WORK="$ROOT/scripts/bench/work/foundation"
PY=/usr/bin/python3
mkdir -p "$WORK"

for variant in inline external; do
  model="$WORK/mlp_$variant.onnx"
  if [[ ! -f "$model" ]]; then
    flag=""; [[ $variant == external ]] && flag="--external"
    "$PY" "$ROOT/scripts/gen_large_model.py" "$model" --size-mb "$SIZE_MB" $flag >&2
  fi
done

cat >"$WORK/py_ops.py" <<'PYEOF'
import sys, collections, onnx
op, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
m = onnx.load(path)
if op == "check":
    onnx.checker.check_model(m, full_check=True)
elif op == "infer-shapes":
    m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    onnx.save(m, out, save_as_external_data=path.endswith("external.onnx"))
elif op == "inspect":
    hist = collections.Counter(n.op_type for n in m.graph.node)
    params = sum(int(__import__("numpy").prod(t.dims)) for t in m.graph.initializer)
    print(dict(hist), params)
PYEOF

# measure NAME CMD...: runs CMD under /usr/bin/time -v; prints "wall_seconds rss_kb exit".
measure() {
  local log="$WORK/time.log"
  set +e
  /usr/bin/time -v "$@" >/dev/null 2>"$log"
  local rc=$?
  set -e
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  echo "$wall $rss $rc"
}

printf "%-9s %-13s %10s %10s %7s %11s %11s %7s  %s\n" model command "porttool_s" "python_s" \
  "wall_x" "porttool_MB" "python_MB" "rss_x" "exit(pt/py)"
for variant in inline external; do
  model="$WORK/mlp_$variant.onnx"
  file_mb=$(du -m --apparent-size "$model" | cut -f1)
  for cmd in inspect check infer-shapes; do
    out="$WORK/out_${variant}_porttool.onnx"
    rm -f "$out" "$out.data" "$WORK/out_${variant}_py.onnx"*
    args=("$cmd" "$model")
    [[ $cmd == infer-shapes ]] && args+=(-o "$out" --input-shape x:1x1024)
    read -r pt_wall pt_rss pt_rc < <(measure "$BIN" -q "${args[@]}")
    read -r py_wall py_rss py_rc < <(measure "$PY" "$WORK/py_ops.py" "$cmd" "$model" \
      "$WORK/out_${variant}_py_$variant.onnx")
    awk -v m="$variant" -v c="$cmd" -v pw="$pt_wall" -v yw="$py_wall" -v pr="$pt_rss" \
      -v yr="$py_rss" -v prc="$pt_rc" -v yrc="$py_rc" 'BEGIN {
      printf "%-9s %-13s %10.2f %10.2f %7.2f %11.1f %11.1f %7.2f  %s/%s\n", m, c, pw, yw,
        (yw > 0 ? pw / yw : 0), pr / 1024, yr / 1024, (yr > 0 ? pr / yr : 0), prc, yrc }'
  done
  echo "  ($variant model file: ${file_mb} MB; targets: external RSS < 100 MB; inline RSS <= 1.3x file = $((file_mb * 13 / 10)) MB, wall <= 0.5x python)"
done
rm -f "$WORK"/out_*
