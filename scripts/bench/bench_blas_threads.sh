#!/usr/bin/env bash
# Whether Debian's OpenBLAS lets the executor's two pool threads multiply at once: for each
# installed build (pthread, serial, openmp), one thread doing a 256x384x1536 GEMM (the anchor)
# against two threads doing half each, as ratios (ideal 0.50x). The pthread build (the one the
# executor links) measured 0.59x-1.05x here from run to run: it sometimes serialises the two
# calls, which caps MatMul/Conv at 2 threads. The serial build ran them side by side (0.56x-0.83x)
# but is not safe to call from two threads: linked into the executor it gave PP-OCRv4 det
# different outputs in 6 of 20 runs. Prints figures only.
#
# Usage: scripts/bench/bench_blas_threads.sh [REPEAT]     (default 41)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${1:-41}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
g++ -O2 -std=c++17 scripts/bench/blas_threads.cc -o "$WORK/blas_threads" -lopenblas -lpthread
LIBDIR=/usr/lib/$(gcc -print-multiarch)
printf '%-17s %8s %8s %10s %8s %9s %9s\n' build 1t_med 1t_p90 2x½_med 2x½_p90 "med" "p90"
for BUILD in openblas-pthread openblas-serial openblas-openmp; do
  [ -e "$LIBDIR/$BUILD/libopenblas.so.0" ] || { echo "$BUILD: not installed" >&2; continue; }
  printf '%-17s ' "$BUILD"
  LD_LIBRARY_PATH="$LIBDIR/$BUILD" "$WORK/blas_threads" "$REPEAT"
done
echo "1t = one thread, whole product (ms); 2x½ = two threads, half the rows each (ms); ratios 2x½ / 1t"
