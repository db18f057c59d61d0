// Intra-op threading: one persistent pool shared by all kernels. Kernels split large loops with
// ParallelFor; BLAS runs single-threaded inside (two threading systems on 2 cores made the
// executor slower than one thread — see ../shared/reference/executor-performance.md).
#pragma once

#include <cstdint>
#include <functional>

namespace porttool::runtime {

// Number of threads kernels may use (default: all cores). Also pins BLAS to one thread.
void SetNumThreads(int n);
int NumThreads();

// Calls fn(begin, end) over [0, n) in about NumThreads() chunks of at least `min_chunk` items;
// runs inline when there is one chunk. Blocks until all chunks are done.
void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace porttool::runtime
