#!/usr/bin/env bash
# quantize-calibrate on PP-OCRv4 det (1x3x640x640) with ../shared/calib-images: prints figures,
# never fails on them.
#  - memory: peak RSS calibrating 64 samples (8 images + 7 crops each) vs 8 samples; the issue's
#    target is <= 1.1x (statistics stream; nothing per sample is kept);
#  - speed: calibration time vs samples x single-inference time / threads (target <= 1.3x: the
#    observers add at most 30 %); single inference is `porttool run` median at 1 thread on the
#    model as given.
# This machine kind is noisy (the same run varies by 15 %), so ROUNDS rounds each measure the
# anchor (before and after, averaged) and both calibrations back to back; the median ratio is the
# figure.
# Usage: scripts/bench/bench_quantize.sh [THREADS=2] [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
PT=build/porttool
MODEL=../shared/models/ch_PP-OCRv4_det_infer.onnx
IMAGES=../shared/calib-images
THREADS=${1:-2}
ROUNDS=${2:-3}
[ -f "$MODEL" ] || { echo "bench_quantize: $MODEL not found, skipping"; exit 0; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# percentile without the remedies: what this bench has always measured (the statistics pass).
PRE=(--resize 640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --method percentile
     --no-equalize --no-bias-correction --no-eval)

calib() {  # crops -> "seconds peak_kb"
  /usr/bin/time -f "%e %M" -o "$TMP/time" $PT quantize-calibrate "$MODEL" --data "$IMAGES" \
    "${PRE[@]}" --crops "$1" --threads "$THREADS" --table "$TMP/t$1.json" >/dev/null
  cat "$TMP/time"
}

/usr/bin/python3 -c "import numpy as np; np.save('$TMP/x.npy', np.random.default_rng(0).standard_normal((1,3,640,640)).astype(np.float32))"
single() {  # median ms of 5 `porttool run` inferences at 1 thread
  $PT run "$MODEL" --input x="$TMP/x.npy" --threads 1 --repeat 5 --json |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['median'])"
}
for round in $(seq "$ROUNDS"); do
  # The anchor is measured before and after the calibrations and averaged, so a slow or fast
  # spell of the machine weighs on both sides of the ratio.
  before=$(single)
  c8=$(calib 0)
  c64=$(calib 7)
  after=$(single)
  single_ms=$(/usr/bin/python3 -c "print(($before + $after) / 2)")
  echo "$single_ms $c8 $c64" >> "$TMP/rounds"
done
/usr/bin/python3 - "$THREADS" "$TMP/rounds" <<'PY'
import statistics, sys
threads = float(sys.argv[1])
rows = [list(map(float, line.split())) for line in open(sys.argv[2])]
r8, r64, rss = [], [], []
for i, (single_ms, t8, rss8, t64, rss64) in enumerate(rows, 1):
    i8, i64 = 8 * single_ms / 1000 / threads, 64 * single_ms / 1000 / threads
    r8.append(t8 / i8); r64.append(t64 / i64); rss.append(rss64 / rss8)
    print(f"round {i}: single inference (porttool run, 1 thread) {single_ms:.0f} ms; "
          f"8 samples {t8:.1f} s vs {i8:.1f} s ({t8/i8:.2f}x); 64 samples {t64:.1f} s vs "
          f"{i64:.1f} s ({t64/i64:.2f}x); peak RSS {rss8/1024:.0f} / {rss64/1024:.0f} MiB")
print(f"median over {len(rows)} rounds, {threads:.0f} threads:")
print(f"  calibration 64 samples / (samples x single / threads): {statistics.median(r64):.2f} "
      f"(target <= 1.3; includes load, planning, thresholds)")
print(f"  calibration  8 samples / (samples x single / threads): {statistics.median(r8):.2f}")
print(f"  peak RSS 64 samples / 8 samples: {statistics.median(rss):.3f} (target <= 1.1)")
PY
