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
step "rewrite: decompose the custom GELU into standard ops (the 'go through ONNX' remedy)" \
  $PT rewrite $MODEL --rule decompose-gelu,fuse-conv-bn -o "$OUT/demo.std.onnx"
step "check --target again: nothing unsupported left" \
  $PT check "$OUT/demo.std.onnx" --target rknn-rk3588 --input-shape images:1x3x64x64
step "run: the reference executor" \
  $PT run $MODEL --random-inputs --seed 1 --input-shape images:1x3x64x64 --output-dir "$OUT/run" --repeat 5
step "emit-header: buffer sizes, aligned, with a static arena plan and a weight blob" \
  $PT emit-header $MODEL --input-shape images:1x3x64x64 --align 64 --arena \
  -o "$OUT/demo_detector.h" --weights "$OUT/demo_detector_weights.bin"
step "decide: go through ONNX or write a custom operator?" \
  $PT decide $MODEL --target rknn-rk3588 --input-shape images:1x3x64x64
echo
echo "outputs are in $OUT"
