#!/usr/bin/env bash
# porttool's GEMM on aarch64: cross-builds lib/runtime/kernels/sgemm.cc with
# scripts/aarch64/sgemm_check.cc (Debian's g++-aarch64-linux-gnu) and runs the check under
# qemu-user-static. That means correctness only; timing under emulation means nothing. The rest
# of the runtime needs arm64 builds of libonnx and protobuf, so it is not covered here. Exits 0
# with a reason when the cross tools are absent:
#   apt-get install g++-aarch64-linux-gnu qemu-user-static
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null || {
    echo "check_aarch64_sgemm: skipped, $tool absent (apt-get install g++-aarch64-linux-gnu qemu-user-static)"
    exit 0
  }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
aarch64-linux-gnu-g++ -std=c++20 -O3 -Wall -Wextra -Werror -I. scripts/aarch64/sgemm_check.cc \
  lib/runtime/kernels/sgemm.cc -o "$WORK/sgemm_check"
qemu-aarch64-static -L /usr/aarch64-linux-gnu "$WORK/sgemm_check"
