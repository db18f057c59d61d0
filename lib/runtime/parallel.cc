// A persistent thread pool behind ParallelFor. Workers sleep on a condition variable between
// jobs; the calling thread runs the first chunk itself so a 1-thread pool costs nothing. Nested
// or concurrent ParallelFor calls run inline rather than deadlock or oversubscribe the cores.
// Before sleeping, a worker spins for a short while (and the caller, before waiting for the
// workers, too): waking a sleeping thread took about 50 us on a 2-core VM, which made PP-OCR cls
// slower at 2 threads than at 1 (8 parallel kernels per run). ONNX Runtime's pool spins likewise.
#include "lib/runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/runtime/execution.h"

namespace porttool::runtime {
namespace {

thread_local bool tls_inside_parallel = false;

// How long an idle worker polls for the next job before sleeping, and how long the caller polls
// for the workers' chunks before sleeping. A run's kernels come within microseconds of each
// other, so the workers stay awake through a run and sleep between runs.
constexpr auto kWorkerSpin = std::chrono::microseconds(200);
constexpr auto kCallerSpin = std::chrono::milliseconds(2);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` until it holds or `budget` has passed; returns whether it holds.
template <typename Ready>
bool SpinUntil(Ready&& ready, std::chrono::steady_clock::duration budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if (i % 64 == 63 && std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

int DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { Resize(threads); }
  ~ThreadPool() { StopWorkers(); }

  int size() const { return threads_.load(); }

  void Resize(int threads) {
    std::lock_guard<std::mutex> dispatch(dispatch_mutex_);
    StopWorkers();
    threads_ = std::max(1, threads);
    stop_ = false;
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  // At least `threads` threads (the pool only grows: another session may be using them).
  void Reserve(int threads) {
    if (threads > size()) Resize(threads);
  }

  // `budget`: the threads the calling run may use (its ExecutionEnv); chunks never exceed it.
  void Run(int64_t n, int64_t min_chunk, int budget,
           const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(
        std::min(size(), std::max(budget, 1)),
        (n + std::max<int64_t>(min_chunk, 1) - 1) / std::max<int64_t>(min_chunk, 1));
    std::unique_lock<std::mutex> dispatch(dispatch_mutex_, std::try_to_lock);
    if (chunks <= 1 || tls_inside_parallel || !dispatch.owns_lock()) {
      fn(0, n);
      return;
    }
    const ExecutionEnv env = CurrentExecution();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      job_env_ = &env;
      job_n_ = n;
      job_chunks_ = chunks;
      next_chunk_ = 0;
      pending_ = chunks;
      ++generation_;
    }
    wake_.notify_all();
    // The caller takes chunks too, so no core idles while a worker is still waking up.
    std::unique_lock<std::mutex> lock(mutex_);
    while (next_chunk_ < job_chunks_) {
      int64_t chunk = next_chunk_++;
      lock.unlock();
      RunChunk(chunk);
      lock.lock();
      --pending_;
    }
    if (pending_ != 0) {
      lock.unlock();
      SpinUntil([this] { return pending_.load() == 0; }, kCallerSpin);
      lock.lock();
    }
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    lock.unlock();
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> error_lock(error_mutex_);
      std::swap(error, error_);
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  void RunChunk(int64_t chunk) {
    int64_t begin = job_n_ * chunk / job_chunks_;
    int64_t end = job_n_ * (chunk + 1) / job_chunks_;
    bool was_inside = tls_inside_parallel;
    tls_inside_parallel = true;
    try {
      // The chunk runs with the caller's settings, on whichever thread takes it.
      ScopedExecution as_caller(*job_env_);
      (*job_)(begin, end);
    } catch (...) {
      // A worker thread must not let an exception escape; the caller rethrows it.
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    tls_inside_parallel = was_inside;
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      if (next_chunk_ >= job_chunks_) seen = generation_;  // nothing left of the current job
      // generation_ and stop_ change under mutex_; polled here without it, only to decide
      // whether to sleep (the wait below re-checks under the lock).
      if (!stop_ && generation_ == seen) {
        lock.unlock();
        SpinUntil([&] { return stop_.load() || generation_.load() != seen; }, kWorkerSpin);
        lock.lock();
      }
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && next_chunk_ < job_chunks_); });
      if (stop_) return;
      int64_t chunk = next_chunk_++;
      if (next_chunk_ >= job_chunks_) seen = generation_;
      lock.unlock();
      RunChunk(chunk);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  void StopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::atomic<int> threads_{1};
  std::mutex dispatch_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_ = false;
  std::atomic<uint64_t> generation_ = 0;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  const ExecutionEnv* job_env_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunks_ = 0;
  int64_t next_chunk_ = 0;
  std::atomic<int64_t> pending_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

ThreadPool& Pool() {
  // Leaked: workers must outlive static destructors.
  static ThreadPool* pool = new ThreadPool(DefaultThreadCount());
  return *pool;
}

}  // namespace

void SetNumThreads(int n) {
  ExecutionEnv env = DefaultExecution();
  env.threads = n <= 0 ? DefaultThreadCount() : n;
  SetDefaultExecution(env);
  Pool().Reserve(env.threads);
}

int NumThreads() { return std::min(Pool().size(), CurrentExecution().threads); }

void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  int budget = CurrentExecution().threads;
  Pool().Reserve(budget);
  Pool().Run(n, min_chunk, budget, fn);
}

}  // namespace porttool::runtime
