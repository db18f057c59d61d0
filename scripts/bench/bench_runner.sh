#!/usr/bin/env bash
# Runner overhead of `emit-runner` on PP-OCRv4 det split at two nodes: the generated runner's
# total time per run against the sum of its segments' run times (target <= 1.05x: bridges and
# layout work are cheap), with the reference backend plain and with --fake-npu int8,nc1hwc2=16,
# and the unsplit model in `porttool run` in the same run as the anchor. Medians over REPEAT runs.
# Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_runner.sh [REPEAT]
#   PORTTOOL_BIN  porttool binary (default build/porttool); the C API comes from the same build
#   MODEL         model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
#   SHAPE         input shape (default 1x3x640x640)   THREADS  kernel threads (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${1:-10}
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
SHAPE=${SHAPE:-1x3x640x640}
THREADS=${THREADS:-1}
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PKG_CONFIG_PATH="$(dirname "$BIN")/pkgconfig-build"

[ -x "$BIN" ] || { echo "bench_runner: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_runner: $MODEL absent; nothing to measure" >&2; exit 0; }
$PY -c "import numpy as np; np.save('$WORK/x.npy', np.random.RandomState(0).rand(*map(int, '$SHAPE'.split('x'))).astype(np.float32))"
"$BIN" -q split "$MODEL" --at p2o.Mul.28 --at p2o.Resize.3 --input-shape "x:$SHAPE" -o "$WORK/split" >/dev/null

echo "PP-OCRv4 det $SHAPE, split at p2o.Mul.28 and p2o.Resize.3 (5 segments), $THREADS thread(s), median of $REPEAT"
for variant in reference fake-npu; do
  extra=""
  [ $variant = fake-npu ] && extra="--fake-npu int8,nc1hwc2=16 --input x=$WORK/x.npy"
  "$BIN" -q emit-runner "$WORK/split/pipeline.json" -o "$WORK/$variant" --threads "$THREADS" $extra >/dev/null
  cc -std=c99 -O2 -Wall -Wextra -Werror -I"$WORK/$variant" "$WORK/$variant"/*.c \
    $(pkg-config --cflags --libs porttool-runtime) -lm -o "$WORK/$variant/runner"
  line=$("$WORK/$variant/runner" --input "x=$WORK/x.npy" --repeat "$REPEAT" | grep '^median')
  echo "runner ($variant): $line"
done
"$BIN" run "$MODEL" --input-shape "x:$SHAPE" --input "x=$WORK/x.npy" --threads "$THREADS" \
  --repeat "$REPEAT" | grep latency | sed 's/^/anchor: porttool run, unsplit model: /'
