#!/usr/bin/env bash
# Which of Debian's OpenBLAS builds lets the executor's two pool threads multiply at once: for each
# installed build (pthread, serial, openmp), one thread doing a 256x384x1536 GEMM (the anchor)
# against two threads doing half each, as ratios (ideal 0.50x). The reason CMakeLists.txt links
# the serial build. Prints figures only.
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
