#!/usr/bin/env bash
# The README's main command: install, build, and run porttool's main job on the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
PT=build/porttool
MODEL=testdata/demo_detector.onnx
OUT=$(mktemp -d "${TMPDIR:-/tmp}/porttool-demo.XXXXXX")
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "inspect: what is in the model" $PT inspect $MODEL
step "check: ONNX checker + porting lints (exit 1 = an error-level finding)" $PT check $MODEL || true
step "infer-shapes: pin the dynamic input, infer every tensor" \
  $PT infer-shapes $MODEL --input-shape images:1x3x64x64 -o "$OUT/demo.static.onnx"
echo
echo "outputs are in $OUT"
