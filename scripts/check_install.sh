#!/usr/bin/env bash
# ctest `install_layout` and `deb_package`: checks what a user gets — binary, rules, completion,
# man page, the C API's library, header and pkg-config file — and that the installed binary finds
# its rules without PORTTOOL_RULES_DIR and without the source tree, and runs `check`.
#   scripts/check_install.sh BUILD_DIR        `cmake --install` into a temp prefix
#   scripts/check_install.sh --deb BUILD_DIR  `cpack -G DEB`, then `dpkg-deb -x` into a temp dir
#                                             (needs no root: the package is unpacked, not
#                                             installed; prints the .deb's size and cpack's time)
set -euo pipefail
mode=install
if [ "${1:-}" = --deb ]; then
  mode=deb
  shift
fi
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/porttool-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
name=install_layout
[ "$mode" = deb ] && name=deb_package
fail() {
  echo "$name: $*" >&2
  exit 1
}

if [ "$mode" = install ]; then
  # What scripts/demo.sh builds is all that `cmake --install` needs: with the generated files
  # gone, building demo.sh's targets brings them back. And an install that lacks a built file
  # copies nothing: it names what to build.
  demo_targets=$(sed -n 's/^cmake --build build .*--target \([^|]*\)|.*/\1/p' "$src/scripts/demo.sh")
  [ -n "$demo_targets" ] || fail "cannot find the build line of scripts/demo.sh"
  docs=("$build/porttool.bash" "$build/porttool.1")
  restore() { for f in "${docs[@]}"; do [ -e "$f.kept" ] && mv -f "$f.kept" "$f"; done; rm -rf "$tmp"; }
  trap restore EXIT
  for f in "${docs[@]}"; do [ ! -e "$f" ] || mv "$f" "$f.kept"; done
  if cmake --install "$build" --prefix "$tmp/partial" >"$tmp/partial.log" 2>&1; then
    fail "cmake --install succeeded without the completion and man page"
  fi
  grep -q "nothing installed" "$tmp/partial.log" || fail "no clear message: $(cat "$tmp/partial.log")"
  [ ! -e "$tmp/partial" ] || fail "a failed install left files: $(find "$tmp/partial" | head)"
  # shellcheck disable=SC2086
  cmake --build "$build" --target $demo_targets >"$tmp/demo-build.log" 2>&1 ||
    fail "building demo.sh's targets ($demo_targets) failed: $(tail -5 "$tmp/demo-build.log")"
  for f in "${docs[@]}"; do
    [ -s "$f" ] || fail "demo.sh's targets ($demo_targets) do not build $f, which install needs"
    rm -f "$f.kept"
  done
  prefix=$tmp/root
  cmake --install "$build" --prefix "$prefix" >/dev/null
else
  start=$(date +%s%N)
  # -B keeps cpack's staging tree out of the build directory.
  (cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) ||
    fail "cpack failed: $(cat "$tmp/cpack.log")"
  ms=$((($(date +%s%N) - start) / 1000000))
  deb=$(ls "$tmp"/pkg/porttool_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || fail "cpack wrote no porttool_*.deb: $(cat "$tmp/cpack.log")"
  # Captured first: `grep -q` closing the pipe early would fail the writer under pipefail.
  info=$(dpkg-deb --info "$deb")
  grep -q "^ Package: porttool" <<<"$info" || fail "$deb has no Package field: $info"
  grep -q "^ Depends: .*libonnx" <<<"$info" || fail "$deb does not depend on libonnx: $info"
  dpkg-deb -x "$deb" "$tmp/root"
  prefix=$tmp/root/usr
  echo "$name: $(basename "$deb"), $(stat -c %s "$deb") bytes, cpack $((ms / 1000)).$((ms % 1000 / 100)) s"
fi

for f in bin/porttool share/porttool/rules/decision/table.json \
         share/porttool/rules/targets/rknn-rk3588.json \
         share/bash-completion/completions/porttool share/man/man1/porttool.1 \
         include/porttool/runtime.h; do
  [ -s "$prefix/$f" ] || fail "missing $f"
done
# The pkg-config file is relocatable: it must lead to the library and header where they landed.
pc=$(find "$prefix" -name porttool-runtime.pc | head -1)
[ -n "$pc" ] || fail "missing porttool-runtime.pc"
libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir porttool-runtime)
includedir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=includedir porttool-runtime)
[ -e "$libdir/libporttool-runtime.so" ] || fail "pkg-config libdir $libdir has no library"
[ -s "$includedir/porttool/runtime.h" ] || fail "pkg-config includedir $includedir has no header"

unset PORTTOOL_RULES_DIR
# Run from elsewhere so nothing relative to the checkout can help.
cd "$tmp"
out=$("$prefix/bin/porttool" rules validate) || fail "installed rules validate failed"
grep -q "$prefix/share/porttool/rules/targets/rknn-rk3588.json" <<<"$out" ||
  fail "installed binary did not use its own rules: $out"
"$prefix/bin/porttool" check "$src/testdata/demo_detector.onnx" -q >/dev/null ||
  fail "installed check on the demo model exited $?"
"$prefix/bin/porttool" check "$src/testdata/demo_detector.onnx" --target stm32f767 \
  --input-shape images:1x3x64x64 -q >/dev/null && rc=0 || rc=$?
[ "$rc" -le 1 ] || fail "installed check --target exited $rc"
bash -n "$prefix/share/bash-completion/completions/porttool" || fail "completion is not valid bash"
# The shipped target names reach the completion and the man page.
grep -q "rknn-rk3588" "$prefix/share/bash-completion/completions/porttool" ||
  fail "completion does not offer the target names"
grep -q "^.B stm32f767" "$prefix/share/man/man1/porttool.1" || fail "man page lists no targets"
echo "$name: ok ($prefix)"
