#include "lib/runtime/execution.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace porttool::runtime {
namespace {

std::atomic<int> default_threads{0};
std::atomic<bool> default_poison{false};
std::atomic<bool> default_ort_compatible_resize{false};

// The innermost scope on this thread: one pointer, set and restored by ScopedExecution.
thread_local ScopedExecution* current = nullptr;

int AllCores() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace

void SetDefaultExecution(const ExecutionEnv& env) {
  default_threads = std::max(0, env.threads);
  default_poison = env.poison_uninitialized;
  default_ort_compatible_resize = env.ort_compatible_resize;
}

ExecutionEnv DefaultExecution() {
  int threads = default_threads.load();
  return {threads > 0 ? threads : AllCores(), default_poison.load(),
          default_ort_compatible_resize.load()};
}

ExecutionEnv CurrentExecution() { return current ? current->env() : DefaultExecution(); }

ScopedExecution* CurrentScope() { return current; }

ScopedExecution::ScopedExecution(const ExecutionEnv& env) : previous_(current) {
  ExecutionEnv outer = CurrentExecution();
  env_.threads = env.threads > 0 ? env.threads : outer.threads;
  env_.poison_uninitialized = env.poison_uninitialized || outer.poison_uninitialized;
  env_.ort_compatible_resize = env.ort_compatible_resize || outer.ort_compatible_resize;
  current = this;
}

ScopedExecution::~ScopedExecution() { current = previous_; }

}  // namespace porttool::runtime
