#!/usr/bin/env bash
# quantize-calibrate with its default flags only (mse, per-channel, equalization, bias
# correction) on PP-OCRv4 rec and det and PP-OCR cls, judged in ONNX Runtime on held-out text scenes:
# each figure is printed beside its anchor, the float model in the same runtime on the same
# crops (agreement with float; 1.000 is the float model itself). Prints figures, never fails on
# them. The split of ../shared/calib-images/text-scenes is docs/benchmarks.md's: calibrate on
# scenes 000-007, judge on 018-023 (rec) or 008-023 (cls, det).
# Usage: scripts/bench/bench_quant_defaults.sh [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/../.."
PT=build/porttool
MODELS=../shared/models
THREADS=${1:-2}
[ -f "$MODELS/ch_PP-OCRv4_rec_infer.onnx" ] || { echo "bench_quant_defaults: no models, skipping"; exit 0; }
[ -d scripts/ort/node_modules/onnxruntime-node ] || { echo "bench_quant_defaults: no ONNX Runtime (scripts/setup.sh), skipping"; exit 0; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3

judge() {  # name float qdq samples task [labels] -> one line of figures
  local extra=()
  [ -n "${6:-}" ] && extra=(--labels "$6")
  node scripts/ort_task_eval.js "$2" "$3" "$4" --task "$5" "${extra[@]}" --threads "$THREADS" \
    > "$TMP/$1.json"
  $PY - "$1" "$TMP/$1.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[2]))
figures = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in d.items()
                    if not isinstance(v, (dict, list)))
print(f"{sys.argv[1]}: {figures}")
EOF
}

# rec: line crops, calibrated with the defaults only.
$PY scripts/make_text_crops.py --kind rec --scenes 000-007 "$TMP/rec_cal" >/dev/null
$PY scripts/make_text_crops.py --kind rec --scenes 018-023 "$TMP/rec_test" >/dev/null
start=$(date +%s.%N)
$PT quantize-calibrate "$MODELS/ch_PP-OCRv4_rec_infer.onnx" --data "$TMP/rec_cal" --no-eval \
  --threads "$THREADS" --qdq "$TMP/rec.qdq.onnx" >/dev/null
echo "rec calibration (defaults, $THREADS threads): $($PY -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"
judge "rec full int8 vs float (ONNX Runtime, held out 018-023)" \
  "$MODELS/ch_PP-OCRv4_rec_infer.onnx" "$TMP/rec.qdq.onnx" "$TMP/rec_test" ctc

# cls: upright and rotated crops with labels.
$PY scripts/make_text_crops.py --kind cls --scenes 000-007 "$TMP/cls_cal" >/dev/null
$PY scripts/make_text_crops.py --kind cls --scenes 008-023 "$TMP/cls_test" >/dev/null
$PT quantize-calibrate "$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx" --data "$TMP/cls_cal" \
  --no-eval --threads "$THREADS" --qdq "$TMP/cls.qdq.onnx" >/dev/null
judge "cls full int8 vs float (ONNX Runtime, held out 008-023)" \
  "$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$TMP/cls.qdq.onnx" "$TMP/cls_test" classify \
  "$TMP/cls_test.labels.json"

# det: whole 640x640 scenes; the ground truth is boxes.json (scene pixels = model pixels).
$PY scripts/make_text_crops.py --kind det --scenes 000-007 "$TMP/det_cal" >/dev/null
$PY scripts/make_text_crops.py --kind det --scenes 008-023 "$TMP/det_test" >/dev/null
$PT quantize-calibrate "$MODELS/ch_PP-OCRv4_det_infer.onnx" --data "$TMP/det_cal" --no-eval \
  --threads "$THREADS" --qdq "$TMP/det.qdq.onnx" >/dev/null
judge "det full int8 vs float (ONNX Runtime, held out 008-023; gt = ground truth)" \
  "$MODELS/ch_PP-OCRv4_det_infer.onnx" "$TMP/det.qdq.onnx" "$TMP/det_test" detect-db \
  ../shared/calib-images/text-scenes/boxes.json
