#!/usr/bin/env bash
# The reference executor against ONNX Runtime CPU on PP-OCRv4 det at 1x3x640x640, in one run, at 1
# and 2 threads: median latency, throughput ratio and peak RSS side by side. Prints figures only;
# never fails on time (the targets are throughput >= 0.5x ONNX Runtime, RSS <= 2x).
#
# Usage: scripts/bench/bench_executor.sh [REPEAT]
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   MODEL         model (default ../shared/models/ch_PP-OCRv4_det_infer.onnx)
#   SHAPE         input shape (default 1x3x640x640)
# Needs ONNX Runtime for node (scripts/setup.sh --ort); without it only porttool's figures print.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${1:-10}
BIN=${PORTTOOL_BIN:-build/porttool}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
SHAPE=${SHAPE:-1x3x640x640}
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_executor: $BIN not built (scripts/build.sh)" >&2; exit 3; }
[ -f "$MODEL" ] || { echo "bench_executor: $MODEL absent; nothing to measure" >&2; exit 0; }
HAVE_ORT=0
if command -v node >/dev/null && [ -d scripts/ort/node_modules/onnxruntime-node ] &&
   node -e "require('./scripts/ort/node_modules/onnxruntime-node')" 2>/dev/null; then
  HAVE_ORT=1
else
  echo "bench_executor: ONNX Runtime for node not loadable (scripts/setup.sh --ort); porttool only" >&2
fi

peak_rss_mb() {  # /usr/bin/time -v output -> MB
  awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"
}
json_field() {  # FILE KEY... -> value
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(f"{d:.1f}")' "$@"
}

INPUT=$("$PY" -c 'import onnx,sys; m=onnx.load(sys.argv[1]); i={x.name for x in m.graph.initializer}
print([x.name for x in m.graph.input if x.name not in i][0])' "$MODEL")
echo "model: $MODEL  input: $INPUT:$SHAPE  repeat: $REPEAT (after 1 warm-up)  cpu: $(nproc) cores"
printf '%-8s %14s %10s %12s %12s %10s %10s\n' threads porttool_ms ort_ms "throughput" "pt_rss_MB" ort_rss_MB "rss_ratio"
for T in 1 2; do
  /usr/bin/time -v "$BIN" run "$MODEL" --random-inputs --input-shape "$INPUT:$SHAPE" \
    --threads "$T" --repeat "$REPEAT" --json >"$WORK/pt.json" 2>"$WORK/pt.time"
  PT_MS=$(json_field "$WORK/pt.json" latency_ms median)
  PT_RSS=$(peak_rss_mb "$WORK/pt.time")
  ORT_MS=-; ORT_RSS=-; RATIO=-; RSS_RATIO=-
  if [ "$HAVE_ORT" = 1 ]; then
    /usr/bin/time -v node scripts/bench/ort_bench.js "$MODEL" --shape "${SHAPE//x/,}" \
      --threads "$T" --repeat "$REPEAT" >"$WORK/ort.json" 2>"$WORK/ort.time"
    ORT_MS=$(json_field "$WORK/ort.json" median_ms)
    ORT_RSS=$(peak_rss_mb "$WORK/ort.time")
    # Throughput ratio = porttool's inferences/s over ONNX Runtime's (target >= 0.5).
    RATIO=$("$PY" -c "print(f'{$ORT_MS / $PT_MS:.2f}x')")
    RSS_RATIO=$("$PY" -c "print(f'{$PT_RSS / $ORT_RSS:.2f}x')")
  fi
  printf '%-8s %14s %10s %12s %12s %10s %10s\n' "$T" "$PT_MS" "$ORT_MS" "$RATIO" "$PT_RSS" "$ORT_RSS" "$RSS_RATIO"
done
echo "throughput = ORT median / porttool median (target >= 0.50x); rss_ratio = porttool / ORT peak RSS (target <= 2x)"
