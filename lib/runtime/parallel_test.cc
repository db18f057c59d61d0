// The thread pool: every index runs exactly once for any thread count, nested and concurrent
// calls run inline instead of deadlocking, and a kernel's exception reaches the caller.
#include "lib/runtime/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace porttool::runtime {
namespace {

TEST(ParallelFor, CoversEveryIndexOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    SetNumThreads(threads);
    EXPECT_EQ(NumThreads(), threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[i];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << threads << " threads, n=" << n;
    }
  }
  SetNumThreads(0);
  EXPECT_GE(NumThreads(), 1);
}

TEST(ParallelFor, NestedAndConcurrentCallsComplete) {
  SetNumThreads(2);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    ParallelFor(10, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        ParallelFor(10, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
      }
    });
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total, 200);
  SetNumThreads(0);
}

TEST(ParallelFor, PropagatesExceptions) {
  SetNumThreads(2);
  EXPECT_THROW(ParallelFor(100, 1,
                           [](int64_t b, int64_t) {
                             if (b > 0) throw std::runtime_error("boom");
                           }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int64_t> count{0};
  ParallelFor(100, 1, [&](int64_t b, int64_t e) { count += e - b; });
  EXPECT_EQ(count, 100);
  SetNumThreads(0);
}

}  // namespace
}  // namespace porttool::runtime
