#!/usr/bin/env bash
# `compare --per-tensor` against the same comparison of outputs only (the anchor), on PP-OCRv4 det
# at several input sizes: peak RSS (/usr/bin/time %M) and wall time side by side, and their
# ratios. Per-tensor comparison runs the reference first, its tensors going to a temporary file,
# then the candidate against them read back a block at a time, so its RSS should stay that of one
# run (ratio near 1x) as the input grows, not grow with it; the time ratio is the price (writing
# and reading the shared tensors, and their statistics). Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_compare.sh [SIZES...]   (default: 320 640 960)
#   PORTTOOL_BIN  porttool binary (default build/porttool); give an older build to compare
#   MODEL         model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
#   THREADS       --threads for both runs (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
THREADS=${THREADS:-1}
SIZES=${*:-320 640 960}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_compare: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_compare: $MODEL absent; nothing to measure" >&2; exit 0; }

measure() {  # SIZE EXTRA_FLAGS -> "RSS_MB SECONDS"
  /usr/bin/time -f '%M %e' -o "$WORK/time.txt" "$BIN" compare "$MODEL" "$MODEL" \
    --input-shape "x:1x3x$1x$1" --threads "$THREADS" -q $2 >/dev/null 2>"$WORK/err.txt" || {
    echo "bench_compare: compare at $1 $2 failed: $(tail -1 "$WORK/err.txt")" >&2
  }
  awk '{ printf "%.0f %.2f", $1 / 1024, $2 }' "$WORK/time.txt"
}

echo "$BIN on $(basename "$MODEL"), --threads $THREADS"
printf '%-5s | %9s %8s | %9s %8s | %9s %8s\n' size "plain MB" "plain s" "per-t MB" "per-t s" \
  "RSS x" "time x"
for s in $SIZES; do
  read -r plain_mb plain_s <<<"$(measure "$s" "")"
  read -r per_mb per_s <<<"$(measure "$s" "--per-tensor")"
  printf '%-5s | %9s %8s | %9s %8s | %9s %8s\n' "$s" "$plain_mb" "$plain_s" "$per_mb" "$per_s" \
    "$(awk -v a="$per_mb" -v b="$plain_mb" 'BEGIN { printf "%.2fx", a / b }')" \
    "$(awk -v a="$per_s" -v b="$plain_s" 'BEGIN { printf "%.2fx", a / (b > 0 ? b : 0.01) }')"
done
