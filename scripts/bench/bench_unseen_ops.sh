#!/usr/bin/env bash
# The ops issue 49 found the executor slow on, one node at a time against ONNX Runtime in the same
# run, at 1 and 2 threads: MaxPool k = 5, 9, 13 (stride 1, same padding) over 1x256x20x20 (YOLOX's
# SPP), bilinear Resize x2 at M-LSD's three decoder shapes (NCHW, 64 channels, 20/40/80 square)
# and at 80x80x64 NHWC (a tf2onnx Resize left in NHWC), nearest x2 in both layouts; and the
# ConvInteger and DynamicQuantizeLinear nodes of a dynamic-int8 conv net (each row sums that op's
# nodes). The models come from scripts/gen_unseen_op_models.py.
#
# Per case and thread count the engines take ROUNDS turns (porttool, then ORT, so both see the
# same machine); each figure is the median of the rounds' medians. Columns:
#   pt_node   porttool's profiled time of the node (run --profile)
#   ort_op    ORT's profiled kernel time of the op itself (its NCHWc MaxPool: without the
#             ReorderInput/ReorderOutput it adds around a lone pool, which a real model's
#             NCHWc conv chain does not pay per pool)
#   ort_all   ORT's profiled kernel time of every node it ran (the op plus its layout reorders)
# Whole-run latencies are not compared: for one node, onnxruntime-node's per-call cost (copying
# the feeds and a 6.5 MB output into JS) is larger than the kernel, and would be measured instead.
# Ratios are porttool / ORT; the issue's target is <= 1.2x of ort_op. Figures only; never fails
# on time.
#
# Usage: scripts/bench/bench_unseen_ops.sh [RUNS]       (timed runs per process, default 200)
#   ROUNDS        turns per engine, case and thread count (default 3)
#   CASES         "model:dims[:op] ..." subset of the default list (model names as the generator's;
#                 op: the op type whose nodes are compared, default the model's first node's)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   PT_FLAGS      extra flags for porttool run (e.g. --ort-compatible: Resize in ORT's formula)
# Needs ONNX Runtime for node (scripts/setup.sh --ort) and python3-onnx.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-200}
ROUNDS=${ROUNDS:-3}
BIN=${PORTTOOL_BIN:-build/porttool}
read -r -a PT_EXTRA <<<"${PT_FLAGS:-}"
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "bench_unseen_ops: $BIN not built (scripts/build.sh)" >&2; exit 3; }
node -e "require('./scripts/ort/node_modules/onnxruntime-node')" 2>/dev/null ||
  { echo "bench_unseen_ops: ONNX Runtime for node not loadable (scripts/setup.sh --ort)" >&2; exit 3; }
"$PY" scripts/gen_unseen_op_models.py "$WORK"
CASES=${CASES:-"maxpool_k5:1x256x20x20 maxpool_k9:1x256x20x20 maxpool_k13:1x256x20x20
resize_linear_nchw20:1x64x20x20 resize_linear_nchw40:1x64x40x40 resize_linear_nchw:1x64x80x80
resize_linear_nhwc:1x80x80x64 resize_nearest_nchw:1x64x80x80 resize_nearest_nhwc:1x80x80x64
dynamic_int8:1x3x256x256:ConvInteger dynamic_int8:1x3x256x256:DynamicQuantizeLinear"}

# FILE OP -> "pt_node_ms" (sum of porttool's profiled nodes of type OP)
pt_node() {
  "$PY" -c 'import json,sys
print(sum(n["ms"] for n in json.load(open(sys.argv[1]))["profile"]["nodes"] if n["op_type"] == sys.argv[2]))' "$1" "$2"
}
# FILE OP -> "op_ms all_ms" from ort_bench.js --op-times 1
ort_nodes() {
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(d["op_types"].get(sys.argv[2], 0), sum(d["op_types"].values()))' "$1" "$2"
}
median_of() { "$PY" -c 'import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))' "$@"; }

echo "runs: $ROUNDS alternating rounds of $RUNS timed runs (after 1 warm-up)  cpu: $(nproc) cores"
ROW='%-34s %-14s %3s %9s %9s %9s %9s %9s'
printf "$ROW\n" case input thr pt_node ort_op "pt/op" ort_all "pt/all"
for SPEC in $CASES; do
  IFS=: read -r NAME DIMS OP <<<"$SPEC"
  MODEL=$WORK/$NAME.onnx
  LABEL=$NAME${OP:+/$OP}
  [ -n "$OP" ] || OP=$("$PY" -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.node[0].op_type)' "$MODEL")
  for T in 1 2; do
    A=(); B=(); C=()
    for ((R = 0; R < ROUNDS; R++)); do
      "$BIN" run "$MODEL" --random-inputs --threads "$T" --repeat "$RUNS" --profile --json ${PT_EXTRA[@]+"${PT_EXTRA[@]}"} \
        >"$WORK/ptp.json"
      node scripts/bench/ort_bench.js "$MODEL" --shape "${DIMS//x/,}" --threads "$T" \
        --repeat "$RUNS" --op-times 1 >"$WORK/ortp.json"
      A+=("$(pt_node "$WORK/ptp.json" "$OP")")
      read -r OP_MS ALL_MS < <(ort_nodes "$WORK/ortp.json" "$OP")
      B+=("$OP_MS"); C+=("$ALL_MS")
    done
    "$PY" - "$LABEL" "$DIMS" "$T" "$(median_of "${A[@]}")" "$(median_of "${B[@]}")" \
      "$(median_of "${C[@]}")" "$ROW" <<'PY'
import sys
name, dims, t = sys.argv[1:4]
pt, op, allk = map(float, sys.argv[4:7])
ratio = lambda a, b: f"{a / b:.2f}x" if b > 0 else "-"
print(sys.argv[7] % (name, dims, t, f"{pt:.4f}", f"{op:.4f}", ratio(pt, op), f"{allk:.4f}",
                     ratio(pt, allk)))
PY
  done
done
echo "ms are medians per run; pt/op = porttool node / ORT's kernel of the op (target <= 1.20x)"
