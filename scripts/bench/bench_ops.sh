#!/usr/bin/env bash
# Where the time goes, op type by op type: porttool's per-node profile against ONNX Runtime's own
# profiler on the same model, threads and input shape, in one run. ORT reports its kernels after
# its graph fusions (Gemm = MatMul+Add, FusedMatMul = MatMul with a scale, FusedConv = Conv with
# its activation, ...), so a fused op appears only on ORT's side and the op it absorbed is cheaper
# or absent there: read the table together with the totals. Figures only; never fails on time.
#
# Usage: scripts/bench/bench_ops.sh MODEL INPUT DIMS [THREADS] [REPEAT]
#   e.g. scripts/bench/bench_ops.sh ../shared/models/ch_PP-OCRv4_det_infer.onnx x 1x3x640x640 2
#   PORTTOOL_BIN  porttool binary (default build/porttool)
# Needs ONNX Runtime for node (scripts/setup.sh --ort).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '8,11p' "$0" >&2; exit 2; }
MODEL=$1 INPUT=$2 DIMS=$3 THREADS=${4:-1} REPEAT=${5:-10}
BIN=${PORTTOOL_BIN:-build/porttool}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "bench_ops: $BIN not built (scripts/build.sh)" >&2; exit 3; }
"$BIN" run "$MODEL" --random-inputs --input-shape "$INPUT:$DIMS" --threads "$THREADS" \
  --repeat "$REPEAT" --profile --json >"$WORK/pt.json"
node scripts/bench/ort_bench.js "$MODEL" --shape "${DIMS//x/,}" --threads "$THREADS" \
  --repeat "$REPEAT" --op-times 1 >"$WORK/ort.json" 2>"$WORK/ort.err" ||
  { tail -3 "$WORK/ort.err" >&2; exit 3; }
/usr/bin/python3 - "$WORK/pt.json" "$WORK/ort.json" "$MODEL" "$THREADS" <<'PY'
import json, os, sys
pt = json.load(open(sys.argv[1]))["profile"]["op_types"]
ort = json.load(open(sys.argv[2]))["op_types"]
print(f"{os.path.basename(sys.argv[3])}, {sys.argv[4]} thread(s): median kernel ms per run by op type")
print(f"{'op type':24} {'porttool':>9} {'ORT':>9} {'pt/ORT':>8}")
for op in sorted(set(pt) | set(ort), key=lambda o: -max(pt.get(o, 0), ort.get(o, 0))):
    a, b = pt.get(op), ort.get(op)
    cell = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9}"
    ratio = f"{a / b:.2f}x" if a and b else "-"
    print(f"{op:24} {cell(a)} {cell(b)} {ratio:>8}")
ta, tb = sum(pt.values()), sum(ort.values())
print(f"{'total':24} {ta:9.2f} {tb:9.2f} {ta / tb:7.2f}x")
PY
