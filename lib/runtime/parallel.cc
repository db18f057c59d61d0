// A persistent thread pool behind ParallelFor. Workers sleep on a condition variable between
// jobs; the calling thread runs the first chunk itself so a 1-thread pool costs nothing. Nested
// or concurrent ParallelFor calls run inline rather than deadlock or oversubscribe the cores.
#include "lib/runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

// OpenBLAS's own thread control. Declared weak so a different CBLAS (no such symbol) still links.
extern "C" void openblas_set_num_threads(int num_threads) __attribute__((weak));

namespace porttool::runtime {
namespace {

thread_local bool tls_inside_parallel = false;

int DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void PinBlasToOneThread() {
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
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

  void Run(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(
        size(), (n + std::max<int64_t>(min_chunk, 1) - 1) / std::max<int64_t>(min_chunk, 1));
    std::unique_lock<std::mutex> dispatch(dispatch_mutex_, std::try_to_lock);
    if (chunks <= 1 || tls_inside_parallel || !dispatch.owns_lock()) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
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
  bool stop_ = false;
  uint64_t generation_ = 0;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunks_ = 0;
  int64_t next_chunk_ = 0;
  int64_t pending_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

ThreadPool& Pool() {
  static ThreadPool* pool = [] {
    PinBlasToOneThread();
    return new ThreadPool(DefaultThreadCount());  // leaked: workers must outlive static dtors
  }();
  return *pool;
}

}  // namespace

void SetNumThreads(int n) {
  PinBlasToOneThread();
  Pool().Resize(n <= 0 ? DefaultThreadCount() : n);
}

int NumThreads() { return Pool().size(); }

void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  Pool().Run(n, min_chunk, fn);
}

}  // namespace porttool::runtime
