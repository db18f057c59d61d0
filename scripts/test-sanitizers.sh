#!/usr/bin/env bash
# The sanitizer job of CI (called by .ci/run after scripts/test.sh):
#  1. AddressSanitizer + UndefinedBehaviorSanitizer build of every test suite (build-asan, clang 14,
#     -O0 except the executor library at -O1, see CMakeLists.txt) and ctest over it. UB is fatal
#     (-fno-sanitize-recover). Filtered out, because under ASan they take most of the time and
#     exercise kernels the fuzzers and the kernel tests already cover: the ONNX backend node-test
#     sweep, the conformance sweep over the backend models and the real-model comparisons against
#     ONNX Runtime. Also EmitRunner.*: those tests build generated runner programs with the
#     system compiler against libporttool-runtime.so, which here is instrumented by clang's ASan,
#     whose runtime only instrumented programs carry. Not run: the ctest entries that check the
#     install tree, the .deb and the include arrows (no code of porttool's own runs there that the
#     CLI suites do not run), and attribute_matrix (6,870 in-process CLI runs over the node-test
#     carriers, like the node-test sweep; the fuzzers reach the same rules under ASan and UBSan
#     through their dictionary and the structure-aware mutator).
#     The zero-size matrix (ZeroSizeKernels.* in the runtime suite, CliZeroSize.* in the CLI
#     suite) is kept in on purpose: a division by a 0 dim or an offset into an empty tensor is
#     what UBSan reports there and a plain build may survive.
#  2. ThreadSanitizer build of the runtime tests (build-tsan) running the executor's parallel
#     tests (thread pool, parallel kernels, concurrent sessions).
#   scripts/test-sanitizers.sh [asan|tsan]    default: both
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --fuzz
JOBS=$(nproc)
which=${1:-all}
start=$(date +%s)

if [ "$which" = all ] || [ "$which" = asan ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DPORTTOOL_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$JOBS" >/dev/null
  echo "asan: built in $(($(date +%s) - start)) s"
  # Leak checking is on (scripts/lsan.supp: one leak inside Graphviz's dot layout, explained
  # there); allocator_may_return_null lets a refused huge allocation surface as std::bad_alloc
  # (what the code handles) instead of an ASan abort. The valid 10^5-input scale case runs nine
  # subcommands over 3 MB of graph inputs: minutes at -O0 under ASan, seconds in the normal build.
  # EmitRunner.* and HostileNamesTest.EmitRunnerBuilds link a generated runner, built by the
  # system compiler without the ASan runtime, against the instrumented libporttool-runtime.so.
  (cd build-asan &&
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=1 \
      LSAN_OPTIONS=suppressions=$PWD/../scripts/lsan.supp \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      GTEST_FILTER='-NodeTests.*:Conformance.*:*RealModels*:EmitRunner.*:HostileNamesTest.EmitRunnerBuilds:CliScale.AHundredThousandValid*' \
      ctest --output-on-failure -j"$JOBS" -E '^(install_layout|deb_package|layering|attribute_matrix)$')
  echo "asan: done at $(($(date +%s) - start)) s"
fi

if [ "$which" = all ] || [ "$which" = tsan ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DPORTTOOL_TSAN=ON >/dev/null
  cmake --build build-tsan -j"$JOBS" --target porttool_runtime_tests >/dev/null
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    build-tsan/porttool_runtime_tests --gtest_filter='ParallelFor.*:ResizeKernel.*:PoolKernels.*:NormKernels.*:DepthToSpaceKernel.*:ConvKernel.*:ResourceLimitsTest.*:Sgemm.*:ConvFusion.*:VectorPaths.*'
  echo "tsan: done at $(($(date +%s) - start)) s"
fi
