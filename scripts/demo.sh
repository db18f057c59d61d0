#!/usr/bin/env bash
# The README's main command: install, build the porttool binary (only it, plus the C runtime
# library the generated runner links: the test suites are scripts/test.sh's job), and run
# porttool's main job on the bundled model: `porttool port`, from a PC model to a verified bundle
# for an RK3588 NPU (checked, simplified, rewritten where the NPU needs it, split where it cannot
# run, calibrated to int8, headers, runners and the report), then build the bundle's C runner and
# run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x build/porttool ]; then
  echo "demo: bringing build/porttool up to date (incremental)..." >&2
else
  echo "demo: building build/porttool (first build: about 4 minutes on 2 cores; the test suites are not built)..." >&2
fi
start=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
# cmake's "[ NN%]" lines are the progress; everything else from the build is noise here.
cmake --build build -j"$(nproc)" --target porttool porttool_runtime_c |
  grep --line-buffered -E '^\[ *[0-9]+%\]' | sed -u 's/^/  /' >&2
echo "demo: porttool ready ($(( $(date +%s) - start )) s)" >&2
PT=build/porttool
MODEL=testdata/demo_detector.onnx
OUT=$(mktemp -d "${TMPDIR:-/tmp}/porttool-demo.XXXXXX")
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

# A few random samples stand in for calibration data (kilobytes, made on the fly).
mkdir -p "$OUT/samples"
/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(1); [np.save('$OUT/samples/%04d.images.npy' % i, r.random((1, 3, 320, 320), dtype=np.float32)) for i in range(8)]"
step "port: the demo detector to an RK3588 NPU, verified at every step" \
  $PT port $MODEL --target rknn-rk3588 --input-shape images:1x3x320x320 \
  --data "$OUT/samples" --per-channel -o "$OUT/demo.port"
step "the bundle" find "$OUT/demo.port" -maxdepth 2 -not -path '*/runner/*/*'
/usr/bin/python3 -c "import numpy as np; np.save('$OUT/images.npy', np.random.RandomState(1).rand(1, 3, 320, 320).astype(np.float32))"
step "build the bundle's C runner (-Wall -Wextra -Werror) and run it from the bundle" \
  env PKG_CONFIG_PATH="$PWD/build/pkgconfig-build" bash -c "cc -std=c99 -O2 -Wall -Wextra -Werror \
  -I'$OUT/demo.port/runner/reference' '$OUT/demo.port/runner/reference'/*.c \
  \$(pkg-config --cflags --libs porttool-runtime) -lm -o '$OUT/runner' && cd '$OUT/demo.port' && \
  '$OUT/runner' --input images='$OUT/images.npy' --output-dir '$OUT/runner.out' --profile"
echo
echo "bundle: $OUT/demo.port/"
echo "report: $OUT/demo.port/report.html (open it in a browser; report.md is the same in text)"
echo "the parts one by one (check, split, quantize-calibrate, emit-header, decide, ...): README.md"
