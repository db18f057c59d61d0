#!/usr/bin/env bash
# `compare --per-tensor` memory against the same comparison of outputs only (the anchor), in one
# run, on PP-OCRv4 det at several input sizes: peak RSS side by side and their ratio. Per-tensor
# comparison streams the reference run's intermediates to a scratch directory and reads them
# back one at a time, so the ratio should stay near 1 as the input grows. Prints figures only.
#
# Usage: scripts/bench/bench_compare.sh [SIZES...]   (default: 320 640 960)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   MODEL         model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
SIZES=${*:-320 640 960}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_compare: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_compare: $MODEL absent; nothing to measure" >&2; exit 0; }

peak_rss_mb() {  # /usr/bin/time -v output -> MB
  awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"
}
measure() {  # SIZE EXTRA_FLAGS -> peak RSS in MB
  /usr/bin/time -v "$BIN" compare "$MODEL" "$MODEL" --input-shape "x:1x3x$1x$1" --threads 1 \
    -q $2 >/dev/null 2>"$WORK/time.txt" || true
  peak_rss_mb "$WORK/time.txt"
}

printf '%-6s %18s %22s %8s\n' size "outputs only (MB)" "--per-tensor (MB)" ratio
for s in $SIZES; do
  plain=$(measure "$s" "")
  per=$(measure "$s" "--per-tensor")
  printf '%-6s %18s %22s %8s\n' "$s" "$plain" "$per" \
    "$(awk -v a="$per" -v b="$plain" 'BEGIN { printf "%.2fx", a / b }')"
done
