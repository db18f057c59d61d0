// Whether a BLAS runs GEMMs called from two threads at once side by side, as the executor's
// thread pool calls it: one thread multiplying a 256x384 by 384x1536 product (the anchor),
// against two threads each multiplying half the rows, BLAS pinned to one thread per call.
// Prints medians and 90th percentiles of REPEAT runs. Built and run by bench_blas_threads.sh.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  const int repeat = argc > 1 ? std::atoi(argv[1]) : 41;
  openblas_set_num_threads(1);
  const int m = 256, n = 1536, k = 384;
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  auto gemm = [&](int row0, int rows) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, k, 1.f, a.data() + row0 * k, k,
                b.data(), n, 0.f, c.data() + row0 * n, n);
  };
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  std::vector<double> one, two;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    gemm(0, m);
    auto t1 = Clock::now();
    std::thread other([&] { gemm(m / 2, m / 2); });
    gemm(0, m / 2);
    other.join();
    auto t2 = Clock::now();
    one.push_back(ms(t0, t1));
    two.push_back(ms(t1, t2));
  }
  std::sort(one.begin(), one.end());
  std::sort(two.begin(), two.end());
  auto at = [&](const std::vector<double>& v, double q) { return v[size_t(q * (v.size() - 1))]; };
  std::printf("%8.2f %8.2f %10.2f %8.2f %8.2fx %8.2fx\n", at(one, 0.5), at(one, 0.9), at(two, 0.5),
              at(two, 0.9), at(two, 0.5) / at(one, 0.5), at(two, 0.9) / at(one, 0.9));
}
