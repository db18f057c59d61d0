#!/usr/bin/env bash
# Installs what porttool needs to build and test, from Debian bookworm packages. Idempotent: when
# everything is present it does nothing (no apt-get update). Uses sudo when not root.
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh --ort    also nodejs + npm (Debian) and ONNX Runtime for node (npm, into
#                             scripts/ort/) so the comparisons against ONNX Runtime run
#   scripts/setup.sh --fuzz   also clang 14 with its sanitizer/libFuzzer runtimes (fuzz and
#                             sanitizer builds only; the normal build and tests use g++)
#   scripts/setup.sh --browser also Debian's chromium, for the test that renders port's
#                             report.html headless (skipped with a reason without it)
#   scripts/setup.sh --aarch64 also the arm64 architecture, g++-aarch64-linux-gnu, qemu-user-static
#                             and the :arm64 libraries, for scripts/test-aarch64.sh (ctest
#                             runtime_aarch64: the executor's tests cross-built and run under
#                             qemu; skipped with a reason without them)
# Flags combine: scripts/setup.sh --ort --browser (what scripts/test.sh runs).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake make g++ pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev
  libstb-dev libgraphviz-dev
  clang  # the scaffolded kernels' NEON paths are syntax-checked for Arm by clang in the tests
  python3-onnx python3-numpy libonnx-testdata
  time  # /usr/bin/time: peak memory in the run tests and the benchmarks
)

want() { local f; for f in "${FLAGS[@]}"; do [ "$f" = "$1" ] && return 0; done; return 1; }
FLAGS=("$@")
# scripts/fuzz.sh and scripts/test-sanitizers.sh also need clang's sanitizer/libFuzzer runtimes.
if want --fuzz; then PACKAGES+=(clang-14 libclang-rt-14-dev); fi
if want --browser; then PACKAGES+=(chromium); fi
# The cross build links Debian's arm64 libraries (multiarch, beside the amd64 ones); protoc and
# the ONNX headers stay the host's (same versions). libonnx1:arm64 rather than libonnx-dev:arm64,
# which cannot be installed beside the amd64 libonnx-dev (both ship /usr/lib/libonnxifi.so):
# cmake/aarch64/ONNXConfig.cmake stands in for its CMake package.
AARCH64_PACKAGES=(g++-aarch64-linux-gnu qemu-user-static ninja-build libonnx1:arm64
                  libprotobuf-dev:arm64 libgtest-dev:arm64 libfmt-dev:arm64
                  libspdlog-dev:arm64)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# The :arm64 packages need the architecture known to dpkg (the apt-get update below then fetches
# its package lists, since those packages are missing).
if want --aarch64 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding the arm64 architecture" >&2
  $SUDO dpkg --add-architecture arm64
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The aarch64 tools in an install of their own that may fail: multiarch upgrades some amd64
# libraries to the arm64 ones' versions, and a mirror out of step must not stop the build and
# the other tests; ctest runtime_aarch64 then skips and names what is absent (CI, with
# PORTTOOL_REQUIRE_ORACLES=1, fails it instead).
if want --aarch64; then
  missing=()
  for p in "${AARCH64_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]} (for runtime_aarch64)" >&2
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null; } ||
      { echo "setup: could not install the aarch64 tools; runtime_aarch64 will skip (fail under PORTTOOL_REQUIRE_ORACLES=1)" >&2
        $SUDO dpkg --configure -a >/dev/null 2>&1 || true; }  # a half-done install must not block apt
  fi
fi

# ONNX Runtime comparisons (tests, benchmarks) run under node: Debian's nodejs + npm provide it
# (skipped when node and npm are already on PATH, however they got there).
if want --ort && ! { command -v node && command -v npm; } >/dev/null; then
  echo "setup: installing nodejs npm (for ONNX Runtime comparisons)" >&2
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; } ||
    echo "setup: could not install nodejs/npm; ONNX Runtime comparisons will be skipped" >&2
fi

# ONNX Runtime is only a reference for comparisons: without node/npm (or without the registry)
# the tests that need it skip, so its absence never fails the setup.
if want --ort && [ ! -d scripts/ort/node_modules/onnxruntime-node ]; then
  if ! command -v npm >/dev/null; then
    echo "setup: npm not found; ONNX Runtime comparisons will be skipped (they are listed after the tests)" >&2
  else
    mkdir -p scripts/ort
    (cd scripts/ort && npm install --silent --no-audit --no-fund --ignore-scripts onnxruntime-node@1 >/dev/null) ||
      echo "setup: npm install onnxruntime-node failed; ONNX Runtime comparisons will be skipped" >&2
  fi
fi
