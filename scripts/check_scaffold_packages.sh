#!/usr/bin/env bash
# The scaffold-op templates compiled as what they are (ctest `scaffold_templates`): scaffolds
# packages for nodes of the bundled demo model and builds each one with its own CMakeLists.txt and
# -Wall -Wextra -Werror for C and C++, then runs its tests. The nodes cover the kinds of package the
# templates make: working kernels (Gelu, HardSwish, Sigmoid) whose kit tests must pass on the SIMD
# path and plain C; skeletons (Conv and Resize with a static shape rule, Add with two inputs,
# BatchNormalization with five) whose schema test must pass and whose kit test must say "not
# implemented"; and Gelu without pinned shapes (no kit, dims unknown in the schema test). Without
# SDK roots a package compiles its ONNX Runtime adapter against the stub it ships (ort/stub); the
# RKNN toolkit class must be valid Python. The RKNN, TensorRT and TFLite Micro C/C++ adapters need
# their SDKs' headers: scaffold_op_test.cc compiles them against contract shims.
#   scripts/check_scaffold_packages.sh PORTTOOL_BIN [WORK_DIR]     exit 1 on the first failure
set -euo pipefail
cd "$(dirname "$0")/.."
PT=${1:?usage: scripts/check_scaffold_packages.sh PORTTOOL_BIN [WORK_DIR]}
if [ -n "${2:-}" ]; then
  WORK=$2
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/scaffold-packages.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
fi
DEMO=testdata/demo_detector.onnx
PIN="--input-shape images:1x3x64x64"
STRICT="-Wall -Wextra -Werror"
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)

fail() {
  echo "scaffold_templates: $1" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 40 "$2" >&2
  exit 1
}

# package NAME NODE KIND [scaffold-op flags...]; KIND: working | skeleton
package() {
  local name=$1 node=$2 kind=$3
  shift 3
  local pkg=$WORK/$name
  rm -rf "$pkg"
  "$PT" -q scaffold-op "$DEMO" --node "$node" "$@" -o "$pkg" >"$WORK/$name.scaffold.log" 2>&1 ||
    fail "$name: scaffold-op --node $node failed" "$WORK/$name.scaffold.log"
  local sym
  sym=$(sed -n 's/^project(porttool_\(.*\) C CXX)$/\1/p' "$pkg/CMakeLists.txt")
  [ -n "$sym" ] || fail "$name: no project() line in the package's CMakeLists.txt"
  cmake -S "$pkg" -B "$pkg/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$STRICT" -DCMAKE_CXX_FLAGS="$STRICT" >"$WORK/$name.build.log" 2>&1 ||
    fail "$name: cmake configure failed" "$WORK/$name.build.log"
  cmake --build "$pkg/build" >>"$WORK/$name.build.log" 2>&1 ||
    fail "$name: the package does not build with $STRICT" "$WORK/$name.build.log"
  # Every target, the schema test and the ORT stub check included: configure said nothing is left
  # out but the SDK adapters.
  grep -q "libonnx not found" "$WORK/$name.build.log" && fail "$name: schema test not built (no libonnx)"
  find "$pkg/build" -name "${sym}_ort.cc.o" | grep -q . ||
    fail "$name: the ONNX Runtime adapter was not compiled against ort/stub" "$WORK/$name.build.log"
  local ctest=(ctest --test-dir "$pkg/build" --output-on-failure)
  case $kind in
    working)
      "${ctest[@]}" >"$WORK/$name.test.log" 2>&1 || fail "$name: package tests failed" "$WORK/$name.test.log"
      ;;
    skeleton)
      "${ctest[@]}" -R "^${sym}_schema\$" >"$WORK/$name.test.log" 2>&1 ||
        fail "$name: schema test failed" "$WORK/$name.test.log"
      local out
      out=$("$pkg/build/${sym}_test" 2>&1) && fail "$name: the kit test passed without a kit or kernel"
      if [[ $out != *"not implemented"* ]]; then
        fail "$name: the skeleton's test does not say 'not implemented': $out"
      fi
      ;;
  esac
  if command -v python3 >/dev/null 2>&1; then
    python3 -m py_compile "$pkg"/rknn/*_toolkit.py 2>"$WORK/$name.py.log" ||
      fail "$name: the RKNN toolkit class is not valid Python" "$WORK/$name.py.log"
  fi
  echo "scaffold_templates: $name ($node, $kind): builds with $STRICT, tests as expected"
}

package gelu Custom_GELU_0 working $PIN
package hardswish block2/HardSwish working $PIN
package sigmoid head/Sigmoid working $PIN
package conv neck/Conv skeleton $PIN
package resize up/Resize skeleton $PIN
package add skip/Add skeleton $PIN
package batchnorm stem/BatchNormalization skeleton $PIN
# Unpinned, the package's kit could test nothing it can run: scaffold-op asks for the shapes
# (exit 2) and writes nothing.
rc=0
"$PT" -q scaffold-op "$DEMO" --node Custom_GELU_0 -o "$WORK/gelu_unpinned" \
  >"$WORK/gelu_unpinned.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "gelu_unpinned: scaffold-op exited $rc, expected 2" "$WORK/gelu_unpinned.log"
grep -q -- "--input-shape" "$WORK/gelu_unpinned.log" ||
  fail "gelu_unpinned: no --input-shape hint" "$WORK/gelu_unpinned.log"
[ ! -e "$WORK/gelu_unpinned" ] || fail "gelu_unpinned: a package was written"
echo "scaffold_templates: 7 packages build warning-free; an unpinned node is refused"
