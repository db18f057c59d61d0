#!/usr/bin/env bash
# How porttool's time and memory grow with the model: every subcommand on a chain of N Relu nodes
# and on one Concat of N inputs (valid, then with every input undefined), for N = 10^4, 10^5 and
# 10^6. Prints wall time, peak RSS and output lines per run, and per subcommand the growth for
# each 10x of N (linear = 10x), next to the same growth of the anchor in the same run: ONNX
# Runtime (onnxruntime-node) creating a session for the same model and running it once. Never
# fails on time.
#
# Usage: scripts/bench/bench_scale.sh [PORTTOOL_BIN]
#   SCALE_SIZES="10000 100000 1000000"   the N to run
#   SCALE_TIMEOUT=600                    cap (seconds) per run; a capped run shows as such
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-${PORTTOOL_BIN:-$root/build/porttool}}"
work="$root/scripts/bench/work/scale"
sizes=(${SCALE_SIZES:-10000 100000 1000000})
timeout_s="${SCALE_TIMEOUT:-600}"
ort_dir="$root/scripts/ort/node_modules/onnxruntime-node"
mkdir -p "$work"

missing=()
for n in "${sizes[@]}"; do
  [[ -f "$work/relu_chain_$n.onnx" ]] || missing+=("$n")
done
if ((${#missing[@]})); then
  echo "generating models in $work ..." >&2
  /usr/bin/python3 "$root/scripts/gen_scale_models.py" "$work" "${missing[@]}"
fi

# measure CMD...: runs CMD under /usr/bin/time; sets wall_s, rss_mb, lines, status.
measure() {
  set +e
  /usr/bin/time -f "%e %M" -o "$work/time.txt" timeout "$timeout_s" "$@" >"$work/out.txt" 2>&1
  status=$?
  set -e
  read -r wall_s rss_kb <"$work/time.txt" || true
  [[ "$wall_s" =~ ^[0-9.]+$ ]] || { wall_s=$(tail -1 "$work/time.txt" | cut -d' ' -f1); \
                                    rss_kb=$(tail -1 "$work/time.txt" | cut -d' ' -f2); }
  rss_mb=$(awk -v k="$rss_kb" 'BEGIN { printf "%.0f", k / 1024 }')
  lines=$(wc -l <"$work/out.txt")
}

# The anchor: ONNX Runtime session creation + one run of the model, in node.
ort_js="$work/ort_load_run.js"
cat >"$ort_js" <<JS
const ort = require('$ort_dir');
(async () => {
  const session = await ort.InferenceSession.create(process.argv[2], { intraOpNumThreads: 1 });
  const feeds = {};
  const dims = process.argv[3].split(',').map(Number);
  const size = dims.reduce((a, b) => a * b, 1);
  for (const name of session.inputNames) feeds[name] = new ort.Tensor('float32', new Float32Array(size), dims);
  await session.run(feeds);
})().catch((e) => { console.error(e.message); process.exit(1); });
JS

declare -A secs rss
printf '%-18s %9s  %-16s %8s %8s %7s %5s\n' model N subcommand seconds RSS_MB lines exit
run_row() {  # model n label cmd...
  local model=$1 n=$2 label=$3
  shift 3
  measure "$@"
  secs[$model/$label/$n]=$wall_s
  rss[$model/$label/$n]=$rss_mb
  local shown=$status
  ((status == 124)) && shown="cap"
  printf '%-18s %9s  %-16s %8s %8s %7s %5s\n' "$model" "$n" "$label" "$wall_s" "$rss_mb" "$lines" "$shown"
}

subcommands() {  # model file n cut input-dims
  local model=$1 file=$2 n=$3 cut=$4 dims=$5 out="$work/out"
  rm -rf "$out" && mkdir -p "$out"
  run_row "$model" "$n" check "$bin" check "$file"
  run_row "$model" "$n" inspect "$bin" inspect "$file"
  run_row "$model" "$n" infer-shapes "$bin" infer-shapes "$file" -o "$out/i.onnx"
  run_row "$model" "$n" simplify "$bin" simplify "$file" -o "$out/s.onnx"
  run_row "$model" "$n" fold-constants "$bin" fold-constants "$file" -o "$out/f.onnx"
  run_row "$model" "$n" rewrite "$bin" rewrite "$file" --rule eliminate-identity -o "$out/r.onnx"
  run_row "$model" "$n" split "$bin" split "$file" --at "$cut" -o "$out/split"
  run_row "$model" "$n" emit-header "$bin" emit-header "$file" -o "$out/h.h"
  run_row "$model" "$n" decide "$bin" decide "$file"
  run_row "$model" "$n" run "$bin" run "$file" --random-inputs
  if [[ -d "$ort_dir" ]]; then
    run_row "$model" "$n" "ort load+run" node "$ort_js" "$file" "$dims"
  fi
}

for n in "${sizes[@]}"; do
  subcommands relu_chain "$work/relu_chain_$n.onnx" "$n" "relu$((n / 2))" 1,8
done
for n in "${sizes[@]}"; do
  subcommands concat_inputs "$work/concat_inputs_$n.onnx" "$n" concat 1
done
for n in "${sizes[@]}"; do
  subcommands concat_undefined "$work/concat_undefined_$n.onnx" "$n" concat 1
done

echo
echo "growth per 10x of N (time / RSS; linear = 10x; the anchor is ONNX Runtime in the same run)"
labels=(check inspect infer-shapes simplify fold-constants rewrite split emit-header decide run)
[[ -d "$ort_dir" ]] && labels+=("ort load+run")
for model in relu_chain concat_inputs concat_undefined; do
  for label in "${labels[@]}"; do
    line=$(printf '%-18s %-16s' "$model" "$label")
    for ((i = 1; i < ${#sizes[@]}; i++)); do
      a=${sizes[i - 1]} b=${sizes[i]}
      line+=$(awk -v t0="${secs[$model/$label/$a]}" -v t1="${secs[$model/$label/$b]}" \
                  -v m0="${rss[$model/$label/$a]}" -v m1="${rss[$model/$label/$b]}" -v a="$a" -v b="$b" \
        'BEGIN { tr = (t0 > 0.005) ? sprintf("%.1fx", t1 / t0) : "-";
                 mr = (m0 > 0) ? sprintf("%.1fx", m1 / m0) : "-";
                 printf "   %s->%s: %6s time %6s RSS", a, b, tr, mr }')
    done
    echo "$line"
  done
done
