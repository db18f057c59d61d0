#!/usr/bin/env bash
# Times `porttool port` on PP-OCRv4 det (1x3x640x640) for rknn-rk3588 and onnxruntime-cpu without
# calibration, and for rknn-rk3588 with 8 calibration images (text scenes), and prints the
# per-step times. The anchor, in the same run, is the hand-written script port replaces: the same
# work as separate subcommands (check --target, simplify, rewrite, split --auto --verify,
# quantize-calibrate on the whole model and again per segment, emit-header, emit-runner, decide),
# each loading and saving the model again. Prints figures and ratios; never fails on time.
#
# Usage: scripts/bench/bench_port.sh [PORTTOOL_BIN]
#   ROUNDS=3   runs of each case; the median wall time is printed
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-${PORTTOOL_BIN:-$root/build/porttool}}"
models="${PORTTOOL_SHARED:-$root/../shared}/models"
scenes="${PORTTOOL_SHARED:-$root/../shared}/calib-images/text-scenes"
work="$root/scripts/bench/work/port"
rounds="${ROUNDS:-3}"
det="$models/ch_PP-OCRv4_det_infer.onnx"
if [[ ! -f "$det" ]]; then
  echo "bench_port: $det is absent (../shared/models); nothing to measure" >&2
  exit 0
fi
rm -rf "$work" && mkdir -p "$work/calib"
for i in 000 001 002 003 004 005 006 007; do cp "$scenes/$i.png" "$work/calib/"; done
pin=(--input-shape x:1x3x640x640)
pre=(--resize 640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --per-channel --threads 2)

# seconds CMD...: wall time of one run, in seconds.
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$work/cmd.out" 2>"$work/cmd.err" || { cat "$work/cmd.err" >&2; return 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The script a user writes today for the same bundle (no report page, no determinism checks).
by_hand() {
  local target="$1" calib="$2" d="$work/hand"
  rm -rf "$d" && mkdir -p "$d"
  "$bin" -q check "$det" --target "$target" "${pin[@]}" || true
  "$bin" -q simplify "$det" "${pin[@]}" -o "$d/sim.onnx"
  if [[ "$target" == rknn-rk3588 ]]; then
    "$bin" -q rewrite "$d/sim.onnx" --rule 'convert-opset{min=12 max=19},resize-nearest-half-pixel,decompose-gelu' -o "$d/rw.onnx"
  else
    cp "$d/sim.onnx" "$d/rw.onnx"
  fi
  "$bin" -q split "$d/rw.onnx" --auto --target "$target" "${pin[@]}" --verify --copy-weights -o "$d/split"
  if [[ -n "$calib" ]]; then
    "$bin" -q quantize-calibrate "$d/rw.onnx" --data "$work/calib" "${pre[@]}" --table "$d/table.json"
    for seg in "$d"/split/*_accelerator.onnx; do
      "$bin" -q quantize-calibrate "$seg" --table "$d/table.json" --qdq "${seg%.onnx}.qdq.onnx"
    done
  fi
  for seg in "$d"/split/*.onnx; do
    "$bin" -q emit-header "$seg" --arena --align 64 -o "$d/$(basename "${seg%.onnx}").h"
  done
  "$bin" -q emit-runner "$d/split/pipeline.json" -o "$d/runner"
  "$bin" -q decide "$d/rw.onnx" --target "$target" "${pin[@]}" -o "$d/report.md"
}

port() {
  local target="$1" calib="$2"
  local args=("$bin" port "$det" --target "$target" "${pin[@]}" -o "$work/b.port" --force --json)
  [[ -n "$calib" ]] && args+=(--data "$work/calib" "${pre[@]}")
  "${args[@]}"
}

printf '%-48s %10s %10s %8s\n' "case" "port s" "by hand s" "ratio"
steps_line=()
for case in "rknn-rk3588|" "onnxruntime-cpu|" "rknn-rk3588|calib"; do
  target="${case%%|*}" calib="${case#*|}"
  pt=() hand=()
  for ((r = 0; r < rounds; r++)); do
    pt+=("$(seconds port "$target" "$calib")")
    cp "$work/cmd.out" "$work/last.json"
    hand+=("$(seconds by_hand "$target" "$calib")")
  done
  p=$(printf '%s\n' "${pt[@]}" | median)
  h=$(printf '%s\n' "${hand[@]}" | median)
  label="det 640 -> $target${calib:+, 8 calibration images}"
  printf '%-48s %10.2f %10.2f %8.2f\n' "$label" "$p" "$h" "$(awk -v a="$p" -v b="$h" 'BEGIN { print a / b }')"
  steps_line+=("$label: $(/usr/bin/python3 -c "import json,sys; d=json.load(open('$work/last.json')); print(', '.join('%s %.2f s' % (s['id'], s['ms'] / 1000) for s in d['steps']))")")
done
echo
echo "per-step times of the last run of each case:"
printf '  %s\n' "${steps_line[@]}"
echo "(issue budget: under 10 s without calibration, under 60 s with 8 calibration images)"
