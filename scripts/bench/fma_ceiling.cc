// The machine's own 2-thread/1-thread ceiling, for bench_executor.sh: a loop of independent
// vector multiply-adds that touches no memory, timed on one thread and then split over two, in
// alternating rounds. No code whose work splits over two threads can take less than this
// fraction of its 1-thread time on this host at this moment: on a shared 2-core VM the second
// core gives less than a whole one (measured 0.55-0.57, not 0.50), so a 2t/1t target is read
// against this figure.
//
// Usage: fma_ceiling [ROUNDS]   prints "<median 2t/1t> <1-thread GFLOP/s> <2-thread GFLOP/s>"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

typedef float V16 __attribute__((vector_size(64)));
constexpr int kChains = 8;  // independent accumulators: enough to keep both FMA pipes busy
constexpr long kIterations = 100000000;

float MultiplyAdd(long iterations) {
  V16 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = V16{} + (1.0f + static_cast<float>(i));
  const V16 m = V16{} + 0.999999f, c = V16{} + 1e-7f;
  for (long k = 0; k < iterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * m + c;
  }
  float sum = 0;
  for (int i = 0; i < kChains; ++i) sum += acc[i][0];
  return sum;
}

// Milliseconds for kIterations split over `threads` threads.
double TimeSplit(int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  std::vector<float> sinks(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&sinks, t, threads] { sinks[t] = MultiplyAdd(kIterations / threads); });
  }
  for (auto& th : pool) th.join();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (sinks[0] == 42.f) std::puts("");  // keeps the work observable
  return ms;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::vector<double> ratios, one, two;
  for (int r = 0; r < rounds; ++r) {
    one.push_back(TimeSplit(1));
    two.push_back(TimeSplit(2));
    ratios.push_back(two.back() / one.back());
  }
  const double flop = kIterations * double(kChains) * 16 * 2;
  std::printf("%.2f %.1f %.1f\n", Median(ratios), flop / Median(one) / 1e6,
              flop / Median(two) / 1e6);
  return 0;
}
