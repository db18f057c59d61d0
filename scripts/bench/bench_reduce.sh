#!/usr/bin/env bash
# `porttool reduce` on issue 53's cases, each planted in a copy of a shared model by
# scripts/bench/reduce_cases.py (python3-onnx), checked by a python script as a converter would be:
#   det   a Resize with nearest_mode=round_prefer_ceil fed by a Concat (PP-OCRv4 det, 672 nodes)
#   rec   a Softmax over a non-last axis (PP-OCRv4 rec, 765 nodes, pinned to 1x3x48x320)
#   num   det with one Conv's weights + 1e-2, found by --numeric --against the original det
# For each: nodes left, checks run (and how many of them in the bisection), seconds, whether the
# result is 1-minimal and passes the ONNX checker (python onnx 1.12, full_check), beside the
# issue's figures (<= 3 nodes, <= 250 checks, <= 60 s at --jobs 2) and beside a plain ddmin
# (--no-bisect) on the same case. Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_reduce.sh
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   JOBS          --jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${PORTTOOL_BIN:-build/porttool}")
JOBS=${JOBS:-2}
MODELS=../shared/models
PY=/usr/bin/python3
CASES=$(realpath scripts/bench/reduce_cases.py)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_reduce: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -d "$MODELS" ] || { echo "bench_reduce: $MODELS absent; nothing to measure" >&2; exit 0; }
export PORTTOOL="$BIN"  # the softmax check's shape inference

DET=$MODELS/ch_PP-OCRv4_det_infer.onnx
REC=$MODELS/ch_PP-OCRv4_rec_infer.onnx
"$PY" "$CASES" plant-det "$DET" "$WORK/det.onnx"
"$PY" "$CASES" plant-rec "$REC" "$WORK/rec.onnx"
"$PY" "$CASES" corrupt-conv "$DET" "$WORK/det_bad.onnx" p2o.Conv.40

# NAME MODEL ARGS... -> one table row from reduce.json
row() {
  local name=$1 model=$2
  shift 2
  local out="$WORK/$name.reduced.onnx"
  local start end rc=0
  start=$(date +%s.%N)
  "$BIN" -q reduce "$model" -o "$out" --jobs "$JOBS" "$@" >/dev/null 2>"$WORK/$name.err" || rc=$?
  end=$(date +%s.%N)
  if [ "$rc" != 0 ]; then
    printf '%-16s exit %s: %s\n' "$name" "$rc" "$(tail -1 "$WORK/$name.err")"
    return
  fi
  local checker
  checker=$("$PY" -c "
import onnx, sys
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
print('ok/%d' % len(m.graph.node))" "$out" 2>&1 | tail -1)
  "$PY" - "$out.reduce/reduce.json" "$name" "$(echo "$end - $start" | bc -l)" "$checker" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("%-16s %5d %6d %7d %8.1f %8s %8s  %s" % (
    sys.argv[2], r["nodes_left"], r["invocations"], r["bisect_invocations"], float(sys.argv[3]),
    "yes" if r["minimal"] else "NO", sys.argv[4], ", ".join(r["nodes"])))
EOF
}

RESIZE_CHECK="$PY $CASES check-resize {model}"
SOFTMAX_CHECK="$PY $CASES check-softmax {model}"
echo "$BIN reduce, --jobs $JOBS ($(nproc) cores); issue 53: <= 3 nodes, <= 250 checks, <= 60 s"
printf '%-16s %5s %6s %7s %8s %8s %8s  %s\n' case nodes checks bisect seconds 1-min checker/nodes result
row det "$WORK/det.onnx" --check "$RESIZE_CHECK" --fail-on-output 'unsupported: Resize'
row det-ddmin "$WORK/det.onnx" --no-bisect --check "$RESIZE_CHECK" --fail-on-output 'unsupported: Resize'
row rec "$WORK/rec.onnx" --input-shape x:1x3x48x320 --check "$SOFTMAX_CHECK" \
  --fail-on-output 'unsupported: Softmax'
row rec-ddmin "$WORK/rec.onnx" --input-shape x:1x3x48x320 --no-bisect --check "$SOFTMAX_CHECK" \
  --fail-on-output 'unsupported: Softmax'
row num "$WORK/det_bad.onnx" --numeric --against "$DET" --input-shape x:1x3x640x640
row num-ddmin "$WORK/det_bad.onnx" --no-bisect --numeric --against "$DET" \
  --input-shape x:1x3x640x640
echo "(nodes: left by the search; checker/nodes: the ONNX checker's verdict on the result file and"
echo " the nodes in it, Constant nodes included; 'ok/2' = passes, 2 nodes)"
echo "(num: the corrupted node is p2o.Conv.40; det-ddmin/rec-ddmin/num-ddmin: ddmin from all nodes, no bisection)"
