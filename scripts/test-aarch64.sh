#!/usr/bin/env bash
# porttool's executor on aarch64 (ctest `runtime_aarch64`): cross-builds the runtime test suite
# and libporttool-runtime.so with Debian's g++-aarch64-linux-gnu (cmake/aarch64-linux-gnu.cmake,
# tree build-aarch64, only those two targets) and runs the suite under qemu-user-static: every
# kernel test and the ONNX backend node-test sweep (libonnx-testdata), whose counts it prints.
# With --porttool HOST_BINARY it also builds a generated runner (emit-runner on the demo model,
# reference backend) with aarch64-linux-gnu-gcc against the cross-built library, runs it under
# qemu and compares its output with the host executor's. Correctness only: under emulation,
# timing means nothing.
#   scripts/test-aarch64.sh [--porttool build/porttool] [--build-dir DIR]
# Exit 0: all passed; 77: skipped (a cross tool or an arm64 library absent: the reason is
# printed; scripts/setup.sh --aarch64 installs them); anything else: a failure.
set -euo pipefail
BUILD=""
PORTTOOL=""
while [ $# -gt 0 ]; do  # paths relative to the caller's directory
  case "$1" in
    --porttool) PORTTOOL=$(realpath "$2"); shift 2 ;;
    --build-dir) BUILD=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: scripts/test-aarch64.sh [--porttool HOST_PORTTOOL] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=${BUILD:-$SRC/build-aarch64}

skip() {
  if [ "${PORTTOOL_REQUIRE_ORACLES:-}" = 1 ]; then
    echo "runtime_aarch64: FAILED, $1 and PORTTOOL_REQUIRE_ORACLES=1 (scripts/setup.sh --aarch64)"
    exit 1
  fi
  echo "runtime_aarch64: skipped, $1 (scripts/setup.sh --aarch64)"
  exit 77
}
for tool in aarch64-linux-gnu-g++ aarch64-linux-gnu-gcc qemu-aarch64-static; do
  command -v "$tool" >/dev/null || skip "$tool absent"
done
# The :arm64 libraries the runtime and its tests link (libonnx1 and not libonnx-dev: see
# cmake/aarch64/ONNXConfig.cmake), and the libraries only the configure step looks for.
for pkg in libonnx1:arm64 libprotobuf-dev:arm64 libgtest-dev:arm64 \
  libfmt-dev:arm64 libspdlog-dev:arm64; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    skip "$pkg absent"
done

# From here on a failing command fails the test: exit 1, never a code ctest could read as a skip.
trap 'echo "runtime_aarch64: FAILED at scripts/test-aarch64.sh line $LINENO"; exit 1' ERR
JOBS=${JOBS:-$(nproc)}
# The emulated programs load Debian's arm64 multiarch loader and libraries (libc6:arm64 comes with
# the :arm64 packages), as on a board. Not -L /usr/aarch64-linux-gnu: that loader, of the cross
# compiler's libc build, would run with the multiarch libc.so.6 of another build, and the suite
# hangs in its start-up.
QEMU=(qemu-aarch64-static -L /)
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# Ninja compiles a target's files while the libraries it links are still being built (make
# waits for each), which keeps both cores busy; make when ninja is absent.
generator=()
if [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$SRC" -B "$BUILD" "${generator[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$SRC/cmake/aarch64-linux-gnu.cmake" -DPORTTOOL_RUNTIME_ONLY=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
build_log=$BUILD/build.log
if ! cmake --build "$BUILD" -j"$JOBS" --target porttool_runtime_tests porttool_runtime_c \
  >"$build_log" 2>&1; then
  tail -40 "$build_log"
  echo "runtime_aarch64: FAILED, the cross build failed (full log: $build_log)"
  exit 1
fi
# -Wall -Wextra stay at zero warnings in this build as in the host's: show any.
grep -A3 'warning:' "$build_log" || true
echo "runtime_aarch64: cross-built porttool_runtime_tests and libporttool-runtime.so at $(elapsed) s" \
  "($(grep -c 'warning:' "$build_log" || true) warnings)"

# The suite as ctest runs it on the host (../shared/models for the real-model tests, when there),
# less the two cases on the 640x640 detector, slow under emulation: its thread-count and fusion
# check (three whole runs, about 90 s under qemu; the same check runs on rec and cls) and its
# comparison with ONNX Runtime (about 25 s; cls, hey_jarvis and melspectrogram still compare);
# and M-LSD's pad folding, checked on the whole 320x320 model fused and unfused (193 s under
# qemu; pad_fusion_test's cases check the same folding on the emulated kernels).
filter='-SharedModels/RealModels*.*/ch_PP_OCRv4_det_infer:Mlsd.PadsFoldIntoTheirConvsBitForBit'
# One emulated process runs on one core: the suite runs as $JOBS gtest shards side by side, and
# their logs are read as one.
log=$BUILD/runtime_tests.log
rc=0
pids=()
for ((shard = 0; shard < JOBS; shard++)); do
  GTEST_TOTAL_SHARDS=$JOBS GTEST_SHARD_INDEX=$shard PORTTOOL_SHARED=$SRC/../shared \
    "${QEMU[@]}" "$BUILD/porttool_runtime_tests" --gtest_filter="$filter" >"$log.$shard" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
for ((shard = 0; shard < JOBS; shard++)); do cat "$log.$shard"; done >"$log"
# gtest's totals and the node-test counts (not its per-test lines: scripts/test.sh reads those of
# the host suites for their skip reasons).
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[==========\]|^node tests:|^  FAIL ' "$log" |
  grep -vE ' \([0-9]+ ms\)$' || true
echo "runtime_aarch64: runtime tests under qemu done at $(elapsed) s (full log: $log)"
if [ "$rc" -ne 0 ]; then
  echo "runtime_aarch64: FAILED, porttool_runtime_tests exited $rc under qemu; failing tests:"
  awk '/^\[ RUN/ { buf = "" } { buf = buf $0 "\n" }
       /^\[  FAILED  \] .* \([0-9]+ ms\)$/ { printf "%s", buf }' "$log" | head -200 || true
  exit 1
fi
grep -q '^node tests:' "$log" ||
  echo "runtime_aarch64: the node-test sweep did not run (libonnx-testdata absent)"

if [ -z "$PORTTOOL" ]; then
  echo "runtime_aarch64: generated runner not checked (no --porttool HOST_BINARY)"
else
  # emit-runner is a host tool: the host porttool splits the demo model and writes the package;
  # only the package's C sources are cross-compiled, as a user building for a board would.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  demo=$SRC/testdata/demo_detector.onnx
  "$PORTTOOL" split "$demo" --at Custom_GELU_0 --input-shape images:1x3x64x64 -o "$work/split" \
    >/dev/null
  /usr/bin/python3 -c 'import numpy as np, sys; np.random.seed(5)
np.save(sys.argv[1], np.random.rand(1, 3, 64, 64).astype(np.float32))' "$work/images.npy"
  "$PORTTOOL" run "$demo" --input-shape images:1x3x64x64 --input images="$work/images.npy" \
    --output-dir "$work/ref" >/dev/null
  "$PORTTOOL" emit-runner "$work/split/pipeline.json" -o "$work/pkg" >/dev/null
  # The generated package's sources, with the flags of the host EmitRunner tests.
  aarch64-linux-gnu-gcc -std=c99 -O2 -Wall -Wextra -Werror -I"$work/pkg" "$work"/pkg/*.c \
    $(PKG_CONFIG_PATH=$BUILD/pkgconfig-build pkg-config --cflags --libs porttool-runtime) -lm \
    -o "$work/runner"
  "${QEMU[@]}" "$work/runner" --input images="$work/images.npy" --output-dir "$work/out" \
    >/dev/null
  /usr/bin/python3 - "$work/out/score.npy" "$work/ref/score.npy" <<'EOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
print(f"runtime_aarch64: generated runner (demo model, 2 segments) under qemu: score {a.shape}, "
      f"max |aarch64 runner - x86 executor| = {d:.3g}")
sys.exit(0 if d <= 1e-5 else 1)
EOF
fi
echo "runtime_aarch64: passed in $(elapsed) s"
