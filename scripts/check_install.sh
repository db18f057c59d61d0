#!/usr/bin/env bash
# ctest `install_layout`: installs the build into a temp prefix and checks what a user gets —
# binary, rules, completion, man page — and that the installed binary finds its rules without
# PORTTOOL_RULES_DIR and without the source tree. Usage: scripts/check_install.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d "${TMPDIR:-/tmp}/porttool-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "install_layout: $*" >&2; exit 1; }
for f in bin/porttool share/porttool/rules/decision/table.json \
         share/porttool/rules/targets/rknn-rk3588.json \
         share/bash-completion/completions/porttool share/man/man1/porttool.1; do
  [ -s "$prefix/$f" ] || fail "missing $f"
done
unset PORTTOOL_RULES_DIR
# Run from elsewhere so nothing relative to the checkout can help.
cd "$prefix"
out=$("$prefix/bin/porttool" rules validate) || fail "installed rules validate failed"
echo "$out" | grep -q "$prefix/share/porttool/rules/targets/rknn-rk3588.json" ||
  fail "installed binary did not use its own rules: $out"
"$prefix/bin/porttool" check "$src/testdata/demo_detector.onnx" --target stm32f767 \
  --input-shape images:1x3x64x64 -q >/dev/null && rc=0 || rc=$?
[ "$rc" -le 1 ] || fail "installed check --target exited $rc"
bash -n "$prefix/share/bash-completion/completions/porttool" || fail "completion is not valid bash"
echo "install_layout: ok ($prefix)"
