#!/usr/bin/env bash
# Per-node overhead of the executor: a chain of N Adds of one-element tensors (x + 1, N times),
# where every node's kernel does nothing measurable, so run time / N is the cost of scheduling one
# node (input lookup, type check, kernel context, output bookkeeping). ONNX Runtime on the same
# model in the same run. Target (issue 28): <= 0.5 us per node. Figures only; never fails on time.
#
# Usage: scripts/bench/bench_overhead.sh [N] [REPEAT]      (defaults 1000, 200)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000} REPEAT=${2:-200}
BIN=${PORTTOOL_BIN:-build/porttool}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "bench_overhead: $BIN not built (scripts/build.sh)" >&2; exit 3; }
/usr/bin/python3 - "$WORK/chain.onnx" "$N" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out, n = sys.argv[1], int(sys.argv[2])
nodes = [helper.make_node("Add", ["x" if i == 0 else f"t{i}", "one"],
                          [f"t{i + 1}" if i + 1 < n else "y"], name=f"add{i}") for i in range(n)]
graph = helper.make_graph(nodes, "add_chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                          [numpy_helper.from_array(np.ones([1], np.float32), "one")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
PY
per_node() { /usr/bin/python3 -c "print(f'{$1 * 1000 / $N:.3f}')"; }
PT_MS=$("$BIN" run "$WORK/chain.onnx" --random-inputs --threads 1 --repeat "$REPEAT" --json |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["latency_ms"]["median"])')
ORT_US=-
if node -e "require('./scripts/ort/node_modules/onnxruntime-node')" 2>/dev/null; then
  ORT_MS=$(node scripts/bench/ort_bench.js "$WORK/chain.onnx" --shape 1 --threads 1 \
    --repeat "$REPEAT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
  ORT_US=$(per_node "$ORT_MS")
fi
echo "chain of $N Adds, 1 thread, median of $REPEAT runs: us per node"
printf '%-10s %10s %10s\n' "" porttool ORT
printf '%-10s %10s %10s\n' "per node" "$(per_node "$PT_MS")" "$ORT_US"
