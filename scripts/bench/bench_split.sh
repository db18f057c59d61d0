#!/usr/bin/env bash
# Times `porttool split MODEL --at Custom_GELU_0` against python onnx's onnx.utils.extract_model
# for the same cut, in one run, on (a) 400 MatMul+activation layers of 1024x1024 fp32 weights in
# external data (1.6 GB) and (b) a 50,000-node graph. Prints wall time and peak RSS side by side
# with the ratios. Never fails on time.
#
# Usage: scripts/bench/bench_split.sh [PORTTOOL_BIN]
#   PYTHON_TIMEOUT=600  cap (seconds) for each extract_model run; a capped run is reported as such
#   SKIP_PYTHON=1       time porttool only
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-${PORTTOOL_BIN:-$root/build/porttool}}"
work="$root/scripts/bench/work/split"
py=/usr/bin/python3
timeout_s="${PYTHON_TIMEOUT:-600}"
mkdir -p "$work"

if [[ ! -f "$work/big.onnx" || ! -f "$work/big.data" || ! -f "$work/many.onnx" ]]; then
  echo "generating models in $work ..." >&2
  "$py" "$root/scripts/gen_split_bench_models.py" "$work" >&2
fi

# measure LABEL CMD...: runs CMD under /usr/bin/time -v; sets wall_s, rss_mb, status.
measure() {
  local log="$work/time.log"
  set +e
  /usr/bin/time -v "$@" >"$work/cmd.out" 2>"$log"
  status=$?
  set -e
  wall_s=$(awk -F': ' '/Elapsed \(wall clock\)/ {
      n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$log")
  rss_mb=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$log")
}

# The part before the cut, extracted the way the usual script does it (capped by `timeout`).
extract_py=(timeout "$timeout_s" "$py" -c "import onnx.utils, sys
onnx.utils.extract_model(sys.argv[1], sys.argv[2], [sys.argv[3]], [sys.argv[4]])")

rows=()
run_case() {
  local name="$1" model="$2" input="$3" cut_input="$4"
  rm -rf "$work/$name.split"
  measure "$bin" -q split "$model" --at Custom_GELU_0 -o "$work/$name.split"
  local pt_s="$wall_s" pt_mb="$rss_mb" pt_status="$status"
  [[ "$pt_status" == 0 ]] || { echo "porttool split failed on $name:" >&2; cat "$work/time.log" >&2; }
  local py_s="-" py_mb="-" note=""
  if [[ -z "${SKIP_PYTHON:-}" ]]; then
    rm -f "$work/$name.part.onnx"
    measure "${extract_py[@]}" "$model" "$work/$name.part.onnx" "$input" "$cut_input"
    py_s="$wall_s" py_mb="$rss_mb"
    if [[ "$status" == 124 ]]; then
      note="extract_model capped at ${timeout_s}s (did not finish)"
    elif [[ "$status" != 0 ]]; then
      note="extract_model failed (exit $status): $(tail -1 "$work/time.log" | cut -c1-100)"
    fi
    rm -f "$work/$name.part.onnx"
  fi
  rows+=("$name|$pt_s|$pt_mb|$py_s|$py_mb|$note")
}

echo "porttool: $bin"
run_case big "$work/big.onnx" x mm200
run_case many "$work/many.onnx" x t24999

printf '\n%-6s %14s %14s %18s %18s %10s %10s\n' model "porttool s" "porttool MB" \
  "extract_model s" "extract_model MB" "x faster" "x less mem"
for row in "${rows[@]}"; do
  IFS='|' read -r name pt_s pt_mb py_s py_mb note <<<"$row"
  speed="-" mem="-"
  if [[ "$py_s" != "-" ]]; then
    speed=$(awk -v a="$py_s" -v b="$pt_s" 'BEGIN { printf "%.0f", (b > 0 ? a / b : 0) }')
    mem=$(awk -v a="$py_mb" -v b="$pt_mb" 'BEGIN { printf "%.0f", (b > 0 ? a / b : 0) }')
  fi
  printf '%-6s %14s %14s %18s %18s %10s %10s\n' "$name" "$pt_s" "$pt_mb" "$py_s" "$py_mb" \
    "$speed" "$mem"
  [[ -z "$note" ]] || echo "       note: $note"
done
echo
echo "targets: big < 1 s and < 100 MB (>= 50x faster and less memory than extract_model);"
echo "         many < 1 s. extract_model writes only the part before the cut (one of the"
echo "         three calls a script needs); porttool writes all three segments + pipeline.json."
