#!/usr/bin/env bash
# What `port` costs against one `run` of the same model (issue 49: port on a 1,000-node model
# <= 3x one run). For PP-OCRv4 rec (765 nodes) and det (672 nodes), in the same run and
# interleaved: `porttool run MODEL --random-inputs` (the anchor: load, plan, one inference) and
# `porttool port` to onnxruntime-cpu and rknn-rk3588, each as wall time and as CPU time (user +
# system: the figure a loaded machine distorts least), with the part of port's time spent
# verifying and the equivalence checks it ran (its --json steps' verify_ms and
# equivalence_checks). Prints medians and the ratios port / run; never fails on time.
#
# Usage: scripts/bench/bench_port_verify.sh [PORTTOOL_BIN]
#   ROUNDS=3   runs of each case; the median is printed
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-${PORTTOOL_BIN:-$root/build/porttool}}"
models="${PORTTOOL_SHARED:-$root/../shared}/models"
rounds="${ROUNDS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
[[ -x "$bin" ]] || { echo "bench_port_verify: $bin not built" >&2; exit 3; }

cases=()
[[ -f "$models/ch_PP-OCRv4_rec_infer.onnx" ]] &&
  cases+=("rec|$models/ch_PP-OCRv4_rec_infer.onnx|x:1x3x48x320")
[[ -f "$models/ch_PP-OCRv4_det_infer.onnx" ]] &&
  cases+=("det|$models/ch_PP-OCRv4_det_infer.onnx|x:1x3x640x640")
if [[ ${#cases[@]} -eq 0 ]]; then
  echo "bench_port_verify: ../shared/models is absent; nothing to measure" >&2
  exit 0
fi

# timed CMD...: "wall cpu" in seconds for one run; stdout kept in $work/cmd.out.
timed() {
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >"$work/cmd.out" 2>"$work/cmd.err" ||
    { cat "$work/cmd.err" >&2; return 1; }
  awk '{ print $1, $2 + $3 }' "$work/time"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# "verify_s checks" from port's --json document.
verify_figures() {
  /usr/bin/python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
print(sum(s["verify_ms"] for s in doc["steps"]) / 1000,
      sum(s.get("equivalence_checks", 0) for s in doc["steps"]))' "$work/cmd.out"
}

printf '%-5s %-16s %7s %7s %7s %7s %8s %6s %9s %9s\n' model target "run s" "cpu s" "port s" \
  "cpu s" "verify s" checks "wall x" "cpu x"
for c in "${cases[@]}"; do
  IFS='|' read -r name model pin <<<"$c"
  declare -A wall=() cpu=() verify=() checks=()
  for ((r = 0; r < rounds; r++)); do
    read -r w u < <(timed "$bin" -q run "$model" --random-inputs --input-shape "$pin")
    wall[run]+="$w " cpu[run]+="$u "
    for target in onnxruntime-cpu rknn-rk3588; do
      read -r w u < <(timed "$bin" -q port "$model" --target "$target" --input-shape "$pin" \
        -o "$work/b.port" --force --json)
      read -r v n < <(verify_figures)
      wall[$target]+="$w " cpu[$target]+="$u " verify[$target]+="$v " checks[$target]=$n
    done
  done
  med() { tr ' ' '\n' <<<"$1" | grep . | median; }
  run_w=$(med "${wall[run]}") run_c=$(med "${cpu[run]}")
  for target in onnxruntime-cpu rknn-rk3588; do
    w=$(med "${wall[$target]}") u=$(med "${cpu[$target]}") v=$(med "${verify[$target]}")
    printf '%-5s %-16s %7.3f %7.3f %7.3f %7.3f %8.3f %6s %8.2fx %8.2fx\n' "$name" "$target" \
      "$run_w" "$run_c" "$w" "$u" "$v" "${checks[$target]}" \
      "$(awk -v a="$w" -v b="$run_w" 'BEGIN { print a / b }')" \
      "$(awk -v a="$u" -v b="$run_c" 'BEGIN { print a / b }')"
  done
  unset wall cpu verify checks
done
echo "anchor: one 'porttool run' of the same model in the same run (issue 49: port <= 3x)"
