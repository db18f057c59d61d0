#!/usr/bin/env bash
# Refusal cost of hostile models (scripts/gen_hostile_models.py): for every model x subcommand,
# the exit code, wall time and peak RSS of porttool, side by side with the issue's anchor (exit 3
# in under 1 s and under 300 MB) as ratios. Prints figures only; never fails on time.
#
# Usage: scripts/bench/bench_caps.sh     PORTTOOL_BIN: porttool binary (default build/porttool)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${PORTTOOL_BIN:-build/porttool}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "bench_caps: $BIN not built (scripts/build.sh)" >&2; exit 3; }
/usr/bin/python3 scripts/gen_hostile_models.py "$WORK" >/dev/null

node_of() {
  case $1 in
    huge_input | huge_initializer) echo relu ;; reshape_overflow) echo reshape ;;
    expand_tb) echo expand ;; tile_tb) echo tile ;; constant_of_shape_tb) echo fill ;;
    loop_trip_count) echo loop ;;
  esac
}
printf '%-26s %-13s %4s %8s %8s %10s %10s\n' model command exit time_s rss_mb 'time/1s' 'rss/300MB'
worst_t=0
worst_m=0
for f in "$WORK"/*.onnx; do
  m=$(basename "$f" .onnx)
  for c in check infer-shapes run split emit-header decide fold-constants; do
    case $c in
      infer-shapes | fold-constants) args="-o $WORK/out.onnx" ;; run) args="--random-inputs" ;;
      split) args="--at $(node_of "$m") -o $WORK/out.split" ;; emit-header) args="-o $WORK/out.h" ;;
      *) args="" ;;
    esac
    set +e
    /usr/bin/time -f '%e %M' -o "$WORK/time" "$BIN" $c "$f" $args -q >/dev/null 2>&1
    rc=$?
    set -e
    read -r t kb < <(tail -1 "$WORK/time")
    mb=$(awk -v k="$kb" 'BEGIN { printf "%.0f", k / 1024 }')
    printf '%-26s %-13s %4s %8s %8s %10.2f %10.2f\n' "$m" "$c" "$rc" "$t" "$mb" \
      "$(awk -v t="$t" 'BEGIN { print t / 1 }')" "$(awk -v m="$mb" 'BEGIN { print m / 300 }')"
    worst_t=$(awk -v a="$worst_t" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
    worst_m=$(awk -v a="$worst_m" -v b="$mb" 'BEGIN { print (b > a) ? b : a }')
  done
done
echo "worst: ${worst_t} s (anchor 1 s), ${worst_m} MB (anchor 300 MB)"
