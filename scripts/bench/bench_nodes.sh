#!/usr/bin/env bash
# Where the time goes, node by node: porttool's per-node profile against ONNX Runtime's profiler
# on the same model, threads and input shape, in one run, the slowest nodes first. ORT renames the
# nodes it rewrites (its NCHWc convs are named after their output, "<output>_nchwc"), so a row
# pairs the two by node name or by the node's first output. A fused tail runs inside its conv on
# both sides, but not always the same tail (porttool fuses a residual Add, ORT's NCHWc conv its
# activation): read a conv row together with the Add rows. Figures only; never fails on time.
#
# Usage: scripts/bench/bench_nodes.sh MODEL INPUT DIMS [THREADS] [REPEAT] [TOP]
#   e.g. scripts/bench/bench_nodes.sh ../shared/models/mlsd_320_large.onnx \
#          input_image_with_alpha:0 1x320x320x4 1 20 25
#   PORTTOOL_BIN  porttool binary (default build/porttool)
# Needs ONNX Runtime for node (scripts/setup.sh --ort) and python3-onnx.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '9,12p' "$0" >&2; exit 2; }
MODEL=$1 INPUT=$2 DIMS=$3 THREADS=${4:-1} REPEAT=${5:-20} TOP=${6:-25}
BIN=${PORTTOOL_BIN:-build/porttool}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "bench_nodes: $BIN not built (scripts/build.sh)" >&2; exit 3; }
"$BIN" run "$MODEL" --random-inputs --input-shape "$INPUT:$DIMS" --threads "$THREADS" \
  --repeat "$REPEAT" --profile --json >"$WORK/pt.json"
node scripts/bench/ort_bench.js "$MODEL" --shape "${DIMS//x/,}" --threads "$THREADS" \
  --repeat "$REPEAT" --op-times 1 >"$WORK/ort.json" 2>"$WORK/ort.err" ||
  { tail -3 "$WORK/ort.err" >&2; exit 3; }
/usr/bin/python3 - "$WORK/pt.json" "$WORK/ort.json" "$MODEL" "$THREADS" "$TOP" <<'PY'
import json, os, sys
import onnx
pt = json.load(open(sys.argv[1]))["profile"]["nodes"]
ort = json.load(open(sys.argv[2]))["nodes"]
graph = onnx.load(sys.argv[3], load_external_data=False).graph
readers = {}
for n in graph.node:
    for i in n.input:
        readers.setdefault(i, []).append(n)
# The outputs a node's row may go by in ORT: its own, then down the chain of sole readers that a
# fused tail would absorb (ORT names a fused conv after the tail's last output).
TAIL = {"Add", "BatchNormalization", "Clip", "HardSigmoid", "HardSwish", "LeakyRelu", "Mul",
        "Relu", "Sigmoid"}
chain = {}
for i, n in enumerate(graph.node):
    names, out = [], n.output[0] if n.output else ""
    for _ in range(4):
        names.append(out)
        nxt = readers.get(out, [])
        if len(nxt) != 1 or not nxt[0].output or nxt[0].op_type not in TAIL:
            break
        out = nxt[0].output[0]
    chain[n.name or f"#{i}"] = names
def ort_time(name):
    for out in [name] + chain.get(name, []):
        for key in (out, out + "_nchwc"):
            if key in ort:
                return ort.pop(key)["ms"]
    return None
print(f"{os.path.basename(sys.argv[3])}, {sys.argv[4]} thread(s): median ms per run, slowest "
      f"{sys.argv[5]} porttool nodes")
print(f"{'node':48} {'op':14} {'porttool':>9} {'ORT':>9} {'pt/ORT':>8}")
rows = [(p["ms"], p["node"], p["op_type"], ort_time(p["node"])) for p in pt]
for ms, name, op, o in sorted(rows, key=lambda r: -r[0])[: int(sys.argv[5])]:
    label = name if len(name) <= 48 else "..." + name[-45:]
    ratio = f"{ms / o:.2f}x" if o else "-"
    cell = f"{o:9.3f}" if o is not None else f"{'-':>9}"
    print(f"{label:48} {op:14} {ms:9.3f} {cell} {ratio:>8}")
left = sorted(ort.items(), key=lambda kv: -kv[1]["ms"])[:8]
if left:
    print("ORT nodes without a porttool node of that name (its fused or layout nodes):")
    for name, v in left:
        label = name if len(name) <= 48 else "..." + name[-45:]
        print(f"  {label:48} {v['op']:14} {v['ms']:9.3f}")
PY
