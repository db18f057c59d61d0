// Intra-op threading: one persistent pool shared by all kernels. Kernels split large loops with
// ParallelFor; BLAS runs single-threaded inside (two threading systems on 2 cores made the
// executor slower than one thread — see ../shared/reference/executor-performance.md).
#pragma once

#include <cstdint>
#include <functional>

namespace porttool::runtime {

// The program's default kernel thread count (0: all cores; lib/runtime/execution.h). Also pins
// BLAS to one thread.
void SetNumThreads(int n);
// Threads the current run may use: its ExecutionEnv's count (lib/runtime/execution.h).
int NumThreads();

// Calls fn(begin, end) over [0, n) in at most NumThreads() chunks of at least `min_chunk` items,
// each with the caller's ExecutionEnv current; runs inline when there is one chunk. Blocks until
// all chunks are done. The pool is shared: it grows to the largest thread count a run asks for.
void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace porttool::runtime
