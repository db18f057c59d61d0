#!/usr/bin/env bash
# The README's main command: install, build, and run porttool's main job on the bundled model —
# from a PC model to target-ready artefacts: inspect, check, pin shapes, cut at the op the NPU
# rejects (verified numerically), run it, emit the firmware header, and write the decision report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
PT=build/porttool
MODEL=testdata/demo_detector.onnx
OUT=$(mktemp -d "${TMPDIR:-/tmp}/porttool-demo.XXXXXX")
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "inspect: what is in the model" $PT inspect $MODEL
step "check: ONNX checker + porting lints" $PT check $MODEL
step "check --target: can an RK3588 NPU run it? (exit 1 = no)" \
  $PT check $MODEL --target rknn-rk3588 --input-shape images:1x3x64x64 || true
step "infer-shapes: pin the dynamic input, infer every tensor" \
  $PT infer-shapes $MODEL --input-shape images:1x3x64x64 -o "$OUT/demo.static.onnx"
step "chain: several stages, one load, one save" \
  $PT chain $MODEL -o "$OUT/demo.chain.onnx" \
  -p 'infer-shapes{input-shape=images:1x3x64x64},eliminate-identity,topo-sort,check'
step "split: cut around the custom op, verify the chain numerically" \
  $PT split $MODEL --at Custom_GELU_0 --input-shape images:1x3x64x64 --verify -o "$OUT/demo.split"
step "run: the reference executor" \
  $PT run $MODEL --random-inputs --seed 1 --input-shape images:1x3x64x64 --output-dir "$OUT/run" --repeat 5
step "emit-header: buffer sizes, aligned, with a static arena plan and a weight blob" \
  $PT emit-header $MODEL --input-shape images:1x3x64x64 --align 64 --arena \
  -o "$OUT/demo_detector.h" --weights "$OUT/demo_detector_weights.bin"
# A few random samples stand in for real calibration data (kilobytes, made on the fly).
mkdir -p "$OUT/samples"
/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(1); [np.save('$OUT/samples/%04d.images.npy' % i, r.random((1, 3, 64, 64), dtype=np.float32)) for i in range(8)]"
step "quantize-calibrate: INT8 ranges (entropy), a QDQ model, and what it costs in accuracy" \
  $PT quantize-calibrate $MODEL --data "$OUT/samples" --method entropy --per-channel \
  --table "$OUT/demo.table.json" --trt-cache "$OUT/demo.trt.cache" --qdq "$OUT/demo.qdq.onnx" --threshold score:0.5
step "decide: go through ONNX or write a custom operator?" \
  $PT decide $MODEL --target rknn-rk3588 --input-shape images:1x3x64x64
echo
echo "outputs are in $OUT"
