#!/usr/bin/env bash
# The elementwise and activation op set, op by op, against ONNX Runtime CPU in one run: a one-node
# model per op and size (scripts/bench/gen_opset_models.py: 1x64x56x56, 1x256x14x14, 1x64x112x112;
# the binary ops also against a [1,64,1,1] and a scalar operand, PRelu with a per-channel slope,
# Pow with the constant exponents 2 and 0.5, Sum of 3 inputs, Where with a constant condition),
# so that an op left on a scalar path shows. Two figures per engine: the whole run's median
# (porttool run --json latency_ms.median; ort_bench.js median_ms, which includes node's copy of
# the output into JavaScript, ~0.5 ms at 1x64x56x56) and the op's own kernel time (porttool
# --profile; ORT's profiler, --op-times 1), whose ratio "k pt/ort" is the one to read against the
# target (<= 1.20x at 1 thread). Prints figures only; never fails on time. On a shared machine
# absolute times are noisy: compare the ratios of one run.
#
# Usage: scripts/bench/bench_opset.sh [REPEAT] [THREADS]     (default 200, 1)
#   PORTTOOL_BIN  porttool binary (default build/porttool)
#   OPS           comma-separated op names to run (default: all), e.g. OPS=LeakyRelu,PRelu
# Needs /usr/bin/python3 with onnx and numpy; ONNX Runtime for node (scripts/setup.sh --ort),
# without which only porttool's figures print.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${1:-200}
THREADS=${2:-1}
BIN=${PORTTOOL_BIN:-build/porttool}
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || { echo "bench_opset: $BIN not built (scripts/build.sh)" >&2; exit 3; }
HAVE_ORT=0
if command -v node >/dev/null && [ -d scripts/ort/node_modules/onnxruntime-node ] &&
   node -e "require('./scripts/ort/node_modules/onnxruntime-node')" 2>/dev/null; then
  HAVE_ORT=1
else
  echo "bench_opset: ONNX Runtime for node not loadable (scripts/setup.sh --ort); porttool only" >&2
fi

"$PY" scripts/bench/gen_opset_models.py "$WORK/models" "${OPS:-}" >"$WORK/manifest.tsv"

# FILE OP -> "whole_ms kernel_ms" (kernel "-" when absent)
pt_fields() {
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
k=d.get("profile",{}).get("op_types",{}).get(sys.argv[2])
m=d["latency_ms"]["median"]
print(f"{m:.3f}", f"{k:.3f}" if k is not None else "-")' "$@"
}
ort_fields() {
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
t=d.get("op_types") or {}
k=t.get(sys.argv[2], sum(t.values()) if t else None)  # ORT may run an op as others (HardSwish)
m=d["median_ms"]
print(f"{m:.3f}", f"{k:.3f}" if k is not None else "-")' "$@"
}
ratio() {  # A B -> A/B as "1.23x", "-" when either is absent
  if [ "$1" = - ] || [ "$2" = - ]; then echo -; else "$PY" -c "print(f'{$1 / $2:.2f}x')"; fi
}

echo "threads: $THREADS  repeat: $REPEAT (after 1 warm-up)  cpu: $(nproc) cores," \
  "$(grep -qw avx512f /proc/cpuinfo && echo avx512f || { grep -qw avx2 /proc/cpuinfo && echo avx2 || echo sse2; })"
ROW='%-22s %-11s %-10s %9s %9s %8s %9s %9s %8s\n'
printf "$ROW" case op size pt_ms ort_ms "pt/ort" pt_k_ms ort_k_ms "k pt/ort"
OVER=()
while IFS=$'\t' read -r CASE OP SIZE MODEL SHAPE PT_ARGS; do
  # shellcheck disable=SC2086  # PT_ARGS is a list of --input options
  "$BIN" run "$MODEL" $PT_ARGS --threads "$THREADS" --repeat "$REPEAT" --profile --json \
    >"$WORK/pt.json" 2>"$WORK/pt.err" || { echo "bench_opset: porttool failed on $CASE:" \
    "$(tail -2 "$WORK/pt.err")" >&2; continue; }
  read -r PT_MS PT_K < <(pt_fields "$WORK/pt.json" "$OP")
  ORT_MS=-; ORT_K=-
  if [ "$HAVE_ORT" = 1 ]; then
    if node scripts/bench/ort_bench.js "$MODEL" --shape "$SHAPE" --threads "$THREADS" \
      --repeat "$REPEAT" --op-times 1 >"$WORK/ort.json" 2>"$WORK/ort.err"; then
      read -r ORT_MS ORT_K < <(ort_fields "$WORK/ort.json" "$OP")
    else
      echo "bench_opset: ORT failed on $CASE: $(tail -1 "$WORK/ort.err")" >&2
    fi
  fi
  K_RATIO=$(ratio "$PT_K" "$ORT_K")
  printf "$ROW" "$CASE" "$OP" "$SIZE" "$PT_MS" "$ORT_MS" "$(ratio "$PT_MS" "$ORT_MS")" \
    "$PT_K" "$ORT_K" "$K_RATIO"
  if [ "$K_RATIO" != - ] && "$PY" -c "import sys; sys.exit(0 if ${K_RATIO%x} > 1.2 else 1)"; then
    OVER+=("$CASE ($K_RATIO)")
  fi
done <"$WORK/manifest.tsv"
echo "pt/ort = whole-run median ratio; k pt/ort = the op's kernel time ratio (target <= 1.20x)"
if [ "${#OVER[@]}" -gt 0 ]; then
  echo "over 1.20x (kernel): ${OVER[*]}"
fi
