#!/usr/bin/env bash
# The reference executor against ONNX Runtime CPU in one run, at 1 and 2 threads, on PP-OCRv4 det
# (1x3x640x640), PP-OCR cls (1x3x48x192), PP-OCRv4 rec (1x3x48x320), hey_jarvis and
# melspectrogram (as shipped), a generated transformer encoder block
# (scripts/gen_transformer_block.py: 256 tokens x 384, 6 heads, MLP 1536; attention + LayerNorm +
# GELU MLP) and a generated LeakyRelu conv net (scripts/gen_leaky_convnet.py: 20 Conv + LeakyRelu
# + Max, 5 MaxPool, 4x76x32x1): each engine's median latency, time ratio porttool/ORT (target
# <= 1.0), peak RSS of each process side by side, and porttool's GFLOP/s with its fraction of the
# machine's FMA peak (cores x GHz x FLOP/cycle from the CPU flags: 32 with AVX2+FMA, 64 with
# AVX-512), and each engine's 2-thread time over its 1-thread time ("2t/1t", target <= 0.56 for
# porttool). Prints figures only; never fails on time.
# On a shared machine the speed drifts by tens of percent from minute to minute, so the engines
# take turns: ROUNDS rounds (default 3) of porttool then ORT, each a process of RUNS timed runs
# after a warm-up; an engine's figure is the median of its rounds' medians (peak RSS: the largest).
# RUNS is at least REPEAT, more for a model of a few ms (about 0.5 s per round, at most 2000; the
# "runs" column says ROUNDSxRUNS): ten 1 ms runs moved a ratio by 30% from run to run, and one
# engine timed a minute after the other measured the machine as much as the engine.
# The machine's own 2t/1t floor prints before and after the models (fma_ceiling.cc: a
# register-only multiply-add loop split over two threads; on this shared 2-core VM 0.55-0.57,
# not 0.50), so porttool's 2t/1t can be read against what the host gives at that moment.
# Op-by-op figures: scripts/bench/bench_ops.sh.
#
# Usage: scripts/bench/bench_executor.sh [REPEAT]      (default 10)
#   ROUNDS        turns per engine and thread count (default 3)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   MODELS        "file:input:shape ..." (default: every model in ../shared/models, the
#                 transformer block and the LeakyRelu conv net)
# Needs ONNX Runtime for node (scripts/setup.sh --ort); without it only porttool's figures print.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${1:-10}
ROUNDS=${ROUNDS:-3}
BIN=${PORTTOOL_BIN:-build/porttool}
M=../shared/models
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" scripts/gen_transformer_block.py "$WORK/transformer_block.onnx"
"$PY" scripts/gen_leaky_convnet.py "$WORK/leaky_convnet.onnx"
MODELS=${MODELS:-"$M/ch_PP-OCRv4_det_infer.onnx:x:1x3x640x640 $M/ch_ppocr_mobile_v2.0_cls_infer.onnx:x:1x3x48x192 $M/ch_PP-OCRv4_rec_infer.onnx:x:1x3x48x320 $M/hey_jarvis_v0.1.onnx:x.1:1x16x96 $M/melspectrogram.onnx:input:1x16000 $M/ultraface_RFB-320.onnx:input:1x3x240x320 $M/mlsd_320_large.onnx:input_image_with_alpha:0:1x320x320x4 $M/blazeface_back_256.onnx:input:0:1x256x256x3 $WORK/transformer_block.onnx:x:1x256x384 $WORK/leaky_convnet.onnx:x:4x76x32x1"}

[ -x "$BIN" ] || { echo "bench_executor: $BIN not built (scripts/build.sh)" >&2; exit 3; }
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
print(f"{d:.4f}")' "$@"
}
median_of() { "$PY" -c 'import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))' "$@"; }
max_of() { "$PY" -c 'import sys; print(max(map(float, sys.argv[1:])))' "$@"; }
ms() { "$PY" -c 'import sys; print(f"{float(sys.argv[1]):.3f}")' "$1"; }

CEILING_BIN=$WORK/fma_ceiling
"${CXX:-g++}" -O2 -march=native -pthread scripts/bench/fma_ceiling.cc -o "$CEILING_BIN" 2>/dev/null ||
  CEILING_BIN=
ceiling() {  # WHEN
  [ -n "$CEILING_BIN" ] || { echo "machine 2t/1t floor: no C++ compiler (\$CXX, g++); skipped"; return; }
  read -r C_RATIO C_ONE C_TWO < <("$CEILING_BIN" 3)
  echo "machine 2t/1t floor ($1): a register-only FMA loop at 2 threads takes $C_RATIO of its 1-thread time ($C_ONE -> $C_TWO GFLOP/s), the least any 2t/1t can be on this host now"
}

GHZ=$(awk -F': ' '/cpu MHz/ {print $2 / 1000; exit}' /proc/cpuinfo)
FLOP_PER_CYCLE=$(grep -q avx512f /proc/cpuinfo && echo 64 || echo 32)
echo "repeat: $ROUNDS alternating rounds of at least $REPEAT runs (after 1 warm-up)  cpu: $(nproc) cores at ${GHZ} GHz, ${FLOP_PER_CYCLE} FLOP/cycle/core"
ceiling before
ROW='%-28s %3s %7s %10s %8s %8s %9s %9s %8s %9s %7s %9s %9s\n'
printf "$ROW" model thr runs porttool_ms ort_ms "pt/ort" pt_rss_MB ort_rss_MB "rss" "GFLOP/s" "%peak" \
  "pt_2t/1t" "ort_2t/1t"
for SPEC in $MODELS; do
  # file:input:shape, where a tf2onnx input name has a colon of its own ("input:0")
  MODEL=${SPEC%%:*} REST=${SPEC#*:}
  SHAPE=${REST##*:} INPUT=${REST%:*}
  [ -f "$MODEL" ] || { echo "bench_executor: $MODEL absent; skipped" >&2; continue; }
  GFLOP=$("$PY" scripts/bench/model_flops.py "$MODEL" "$INPUT" "$SHAPE" 2>/dev/null || echo 0)
  PT_1T=; ORT_1T=
  "$BIN" run "$MODEL" --random-inputs --input-shape "$INPUT:$SHAPE" --threads 1 --repeat 3 \
    --json >"$WORK/probe.json"
  RUNS=$("$PY" -c "import math; ms=$(json_field "$WORK/probe.json" latency_ms median)
print(max($REPEAT, min(2000, math.ceil(1500 / $ROUNDS / max(ms, 0.01)))))")
  for T in 1 2; do
    PT_RUNS=(); ORT_RUNS=(); PT_RSS=0; ORT_RSS=0
    for ((R = 0; R < ROUNDS; R++)); do  # the engines alternate, so both see the same machine
      /usr/bin/time -v "$BIN" run "$MODEL" --random-inputs --input-shape "$INPUT:$SHAPE" \
        --threads "$T" --repeat "$RUNS" --json >"$WORK/pt.json" 2>"$WORK/pt.time"
      PT_RUNS+=("$(json_field "$WORK/pt.json" latency_ms median)")
      PT_RSS=$(max_of "$PT_RSS" "$(peak_rss_mb "$WORK/pt.time")")
      [ "$HAVE_ORT" = 1 ] || continue
      /usr/bin/time -v node scripts/bench/ort_bench.js "$MODEL" --shape "${SHAPE//x/,}" \
        --threads "$T" --repeat "$RUNS" >"$WORK/ort.json" 2>"$WORK/ort.time"
      ORT_RUNS+=("$(json_field "$WORK/ort.json" median_ms)")
      ORT_RSS=$(max_of "$ORT_RSS" "$(peak_rss_mb "$WORK/ort.time")")
    done
    PT_MS=$(median_of "${PT_RUNS[@]}")
    ORT_MS=-; RATIO=-; RSS_RATIO=-
    if [ "$HAVE_ORT" = 1 ]; then
      ORT_MS=$(median_of "${ORT_RUNS[@]}")
      RATIO=$("$PY" -c "print(f'{$PT_MS / $ORT_MS:.2f}x')")
      RSS_RATIO=$("$PY" -c "print(f'{$PT_RSS / $ORT_RSS:.2f}x')")
    else
      ORT_RSS=-
    fi
    read -r GFLOPS PEAK < <("$PY" -c "g=$GFLOP/($PT_MS/1e3); p=$T*$GHZ*$FLOP_PER_CYCLE
print(f'{g:.1f} {100*g/p:.0f}%')")
    PT_SCALE=-; ORT_SCALE=-
    if [ "$T" = 1 ]; then
      PT_1T=$PT_MS; ORT_1T=$ORT_MS
    else
      PT_SCALE=$("$PY" -c "print(f'{$PT_MS / $PT_1T:.2f}')")
      [ "$ORT_MS" = - ] || ORT_SCALE=$("$PY" -c "print(f'{$ORT_MS / $ORT_1T:.2f}')")
    fi
    printf "$ROW" "$(basename "$MODEL" .onnx | cut -c1-28)" "$T" "${ROUNDS}x$RUNS" "$(ms "$PT_MS")" \
      "$([ "$ORT_MS" = - ] && echo - || ms "$ORT_MS")" "$RATIO" "${PT_RSS%.*}" "${ORT_RSS%.*}" "$RSS_RATIO" "$GFLOPS" "$PEAK" "$PT_SCALE" "$ORT_SCALE"
  done
done
ceiling after
echo "pt/ort = porttool median / ONNX Runtime median (target <= 1.00x); rss = porttool / ORT peak RSS (target <= 1.00x)"
echo "2t/1t = the engine's 2-thread median / its 1-thread median (target <= 0.56 for porttool)"
