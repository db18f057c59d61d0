#!/usr/bin/env bash
# The README's main command: install, build the porttool binary (only it: the test suites are
# scripts/test.sh's job; plus the C runtime library the generated runner links), and run porttool's main job on the bundled model — from a PC model to
# target-ready artefacts: inspect, check, pin shapes, cut at the op the NPU rejects (verified
# numerically), run it, emit the firmware header, and write the decision report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x build/porttool ]; then
  echo "demo: bringing build/porttool up to date (incremental)..." >&2
else
  echo "demo: building build/porttool (first build: about 5-10 minutes on 2 cores; the test suites are not built)..." >&2
fi
start=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
# cmake's "[ NN%]" lines are the progress; everything else from the build is noise here.
cmake --build build -j"$(nproc)" --target porttool porttool_runtime_c |
  grep --line-buffered -E '^\[ *[0-9]+%\]' | sed -u 's/^/  /' >&2
echo "demo: porttool ready ($(( $(date +%s) - start )) s)" >&2
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
step "run: the reference executor, with output statistics and a per-node profile" \
  $PT run $MODEL --random-inputs --input-shape images:1x3x64x64 --output-dir "$OUT/run" --repeat 5 --profile --top 5
step "emit-runner: a C runner for the split (fake NPU: int8 bridges, NC1HWC2 layout)" \
  $PT emit-runner "$OUT/demo.split/pipeline.json" --fake-npu int8,nc1hwc2=16 -o "$OUT/demo.runner"
/usr/bin/python3 -c "import numpy as np; np.save('$OUT/images.npy', np.random.RandomState(1).rand(1, 3, 64, 64).astype(np.float32))"
step "build the runner (-Wall -Wextra -Werror) and run it" \
  env PKG_CONFIG_PATH="$PWD/build/pkgconfig-build" bash -c "cc -std=c99 -O2 -Wall -Wextra -Werror \
  -I'$OUT/demo.runner' '$OUT/demo.runner'/*.c \$(pkg-config --cflags --libs porttool-runtime) -lm \
  -o '$OUT/demo.runner/runner' && '$OUT/demo.runner/runner' --input images='$OUT/images.npy' \
  --output-dir '$OUT/runner.out' --profile"
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
