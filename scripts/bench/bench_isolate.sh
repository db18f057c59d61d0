#!/usr/bin/env bash
# `compare --isolate` (per-layer local vs accumulated error) on PP-OCRv4 det float vs its QDQ file
# over 8 text scenes, against one `run` of the float model on one of them (the anchor): peak RSS
# (/usr/bin/time %M) and wall time side by side, and the RSS ratio (issue 50's figure: <= 2x).
# The isolate mode runs the reference, spilling the shared tensors to a temporary file, then the
# candidate, then each layer's cone alone, one sample at a time; its statistics accumulate, no
# tensor is kept from one sample to the next, so the ratio should stay near 1x whatever the number
# of samples. Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_isolate.sh
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   MODEL         float model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
#   QDQ           its QDQ file (default: made here by quantize-calibrate --per-channel on scenes
#                 008-023 of ../shared/calib-images/text-scenes)
#   SAMPLES       scenes to compare on (default 000-007: 8 samples, 640x640)
#   THREADS       --threads for every run (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
SCENES=../shared/calib-images/text-scenes
SAMPLES=${SAMPLES:-000-007}
THREADS=${THREADS:-1}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_isolate: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_isolate: $MODEL absent; nothing to measure" >&2; exit 0; }
[ -d "$SCENES" ] || { echo "bench_isolate: $SCENES absent; nothing to measure" >&2; exit 0; }

/usr/bin/python3 scripts/make_text_crops.py --kind det --scenes "$SAMPLES" "$WORK/data" >/dev/null
QDQ=${QDQ:-}
if [ -z "$QDQ" ]; then
  /usr/bin/python3 scripts/make_text_crops.py --kind det --scenes 008-023 "$WORK/calib" >/dev/null
  QDQ=$WORK/det.qdq.onnx
  "$BIN" quantize-calibrate "$MODEL" --data "$WORK/calib" --per-channel --no-eval \
    --threads "$THREADS" --qdq "$QDQ" -q >/dev/null
fi
first=$(ls "$WORK/data" | head -1)
count=$(ls "$WORK/data" | wc -l)

measure() {  # LABEL ARGS... -> "RSS_MB SECONDS"
  local label=$1
  shift
  /usr/bin/time -f '%M %e' -o "$WORK/time.txt" "$BIN" "$@" --threads "$THREADS" -q \
    >"$WORK/out.txt" 2>"$WORK/err.txt" || [ $? -eq 1 ] || {
    echo "bench_isolate: $label failed: $(tail -1 "$WORK/err.txt")" >&2
  }
  # time prints "Command exited with non-zero status 1" first when compare exits 1 (over tolerance)
  tail -1 "$WORK/time.txt" | awk '{ printf "%.0f %.2f", $1 / 1024, $2 }'
}

echo "$BIN on $(basename "$MODEL") vs its QDQ file, $count samples, --threads $THREADS"
read -r run_mb run_s <<<"$(measure "run" run "$MODEL" --input "x=$WORK/data/$first")"
read -r qrun_mb qrun_s <<<"$(measure "run qdq" run "$QDQ" --input "x=$WORK/data/$first")"
read -r iso_mb iso_s <<<"$(measure "compare --isolate" compare "$MODEL" "$QDQ" --isolate \
  --data "$WORK/data")"
printf '%-28s | %8s %8s | %s\n' what "RSS MB" "time s" "RSS x run"
printf '%-28s | %8s %8s | %s\n' "run float (1 sample)" "$run_mb" "$run_s" "1.00x (anchor)"
printf '%-28s | %8s %8s | %s\n' "run QDQ (1 sample)" "$qrun_mb" "$qrun_s" \
  "$(awk -v a="$qrun_mb" -v b="$run_mb" 'BEGIN { printf "%.2fx", a / b }')"
printf '%-28s | %8s %8s | %s\n' "compare --isolate ($count)" "$iso_mb" "$iso_s" \
  "$(awk -v a="$iso_mb" -v b="$run_mb" 'BEGIN { printf "%.2fx", a / b }')"
