#!/usr/bin/env bash
# PP-OCRv4 det's 2-thread/1-thread ratio over PAIRS pairs of runs (the issue's "<= 0.56 in every
# one of 5 runs"), each pair next to what the host gives at that moment and to the anchor in the
# same pair: the machine's own floor (fma_ceiling.cc: a register-only FMA loop split over two
# threads, which no 2-thread code can beat) and ONNX Runtime's 2t/1t on the same model. On a
# shared 2-core VM the floor moves between 0.51 and 0.77 from minute to minute, so a pair is read
# against its own floor. Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_det_scaling.sh [PAIRS] [REPEAT]   (defaults 5 and 10)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
set -euo pipefail
cd "$(dirname "$0")/../.."
PAIRS=${1:-5}
REPEAT=${2:-10}
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=../shared/models/ch_PP-OCRv4_det_infer.onnx
PY=/usr/bin/python3
[ -x "$BIN" ] || { echo "bench_det_scaling: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_det_scaling: $MODEL absent; nothing to measure" >&2; exit 0; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"${CXX:-g++}" -O2 -march=native -pthread scripts/bench/fma_ceiling.cc -o "$WORK/floor"
HAVE_ORT=0
if command -v node >/dev/null && node -e "require('./scripts/ort/node_modules/onnxruntime-node')" \
  2>/dev/null; then
  HAVE_ORT=1
fi

pt_ms() {  # THREADS -> porttool's median ms
  "$BIN" run "$MODEL" --random-inputs --input-shape x:1x3x640x640 --threads "$1" \
    --repeat "$REPEAT" --json | "$PY" -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["latency_ms"]["median"])'
}
ort_ms() {  # THREADS -> ORT's median ms
  node scripts/bench/ort_bench.js "$MODEL" --shape 1,3,640,640 --threads "$1" --repeat "$REPEAT" |
    "$PY" -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["median_ms"])'
}
ratio() { "$PY" -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

ROW='%-5s %9s %9s %9s %7s %9s %8s %8s %9s\n'
printf "$ROW" pair pt_1t_ms pt_2t_ms pt_2t/1t floor pt-floor ort_1t ort_2t ort_2t/1t
for ((P = 1; P <= PAIRS; P++)); do
  read -r FLOOR _ < <("$WORK/floor" 3)
  ONE=$(pt_ms 1)
  TWO=$(pt_ms 2)
  ORT1=-; ORT2=-; ORT_R=-
  if [ "$HAVE_ORT" = 1 ]; then
    ORT1=$(ort_ms 1)
    ORT2=$(ort_ms 2)
    ORT_R=$(ratio "$ORT2" "$ORT1")
  fi
  R=$(ratio "$TWO" "$ONE")
  printf "$ROW" "$P" "$ONE" "$TWO" "$R" "$FLOOR" \
    "$("$PY" -c "print(f'{$R - $FLOOR:+.2f}')")" "$ORT1" "$ORT2" "$ORT_R"
done
echo "pt_2t/1t: porttool's 2-thread median over its 1-thread median (the issue's target <= 0.56);"
echo "floor: the host's register-only FMA loop at 2 threads over 1, measured just before the pair;"
echo "pt-floor: how far det's scaling is from what the host allowed then"
