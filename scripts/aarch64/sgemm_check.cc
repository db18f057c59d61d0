// The GEMM (lib/runtime/kernels/sgemm.cc) on the board's CPU: built by
// scripts/check_aarch64_sgemm.sh with the aarch64 cross compiler and run under qemu-user. It
// checks every shape in {1, 7, 63, 65, 300}^3 with all four transposes against a
// double-precision sum, and that tiling C in 13 x 77 pieces gives the same bits as one call, at
// depth 530 (B packed) and depth 40 (B read in place). The rest of the runtime needs the arm64
// builds of libonnx and protobuf, so this file includes only sgemm.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "lib/runtime/kernels/sgemm.h"

using porttool::runtime::kernels::Sgemm;

namespace {

std::mt19937 rng(1);

std::vector<float> Random(long n) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Whether op(A) op(B) for this shape is within the float sum's error bound everywhere.
bool NearReference(long m, long n, long k, bool ta, bool tb) {
  const auto a = Random(m * k), b = Random(k * n);
  std::vector<float> c(m * n);
  const long lda = ta ? m : k, ldb = tb ? k : n;
  Sgemm(ta, tb, m, n, k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), n);
  for (long i = 0; i < m; ++i) {
    for (long j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (long p = 0; p < k; ++p) {
        const double x = ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      if (std::fabs(c[i * n + j] - sum) > 1e-7 * (k + 2) * (magnitude + 1)) return false;
    }
  }
  return true;
}

bool SplitGivesSameBits(long k) {
  const long m = 97, n = 1100;
  const auto a = Random(m * k), b = Random(k * n);
  std::vector<float> whole(m * n), split(m * n);
  Sgemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, whole.data(), n);
  for (long r0 = 0; r0 < m; r0 += 13) {
    for (long c0 = 0; c0 < n; c0 += 77) {
      const long r = std::min(13L, m - r0), w = std::min(77L, n - c0);
      Sgemm(false, false, r, w, k, 1.f, a.data() + r0 * k, k, b.data() + c0, n, 0.f,
            split.data() + r0 * n + c0, n);
    }
  }
  return std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)) == 0;
}

}  // namespace

int main() {
  int off = 0, cases = 0;
  for (long m : {1, 7, 63, 65, 300})
    for (long n : {1, 7, 63, 65, 300})
      for (long k : {1, 7, 63, 65, 300})
        for (int f = 0; f < 4; ++f, ++cases) off += !NearReference(m, n, k, f & 1, f & 2);
  const int split_failures = !SplitGivesSameBits(530) + !SplitGivesSameBits(40);
  std::printf(
      "aarch64 sgemm: %d of %d shapes off the double reference; %d of 2 split checks "
      "differ\n",
      off, cases, split_failures);
  return off || split_failures ? 1 : 0;
}
