// How the executor runs: the settings that belong to a run rather than to the process. A Session
// takes its kernel thread count with its options and makes its settings current on the calling
// thread while it runs (kernels' ParallelFor and tensor allocation read them there, and the pool
// carries them into its worker chunks); a scope can set them for everything a thread does, e.g.
// `port` runs all its sessions single-threaded. What is left process-wide are the program's
// defaults, set once by the program (the CLI from its flags, a test main), for sessions and kernel
// calls that ask for nothing else.
#pragma once

#include <cstddef>
#include <cstdint>

namespace porttool::runtime {

struct ExecutionEnv {
  int threads = 0;  // kernel threads; 0: the enclosing scope's, else the program's default
  // Tensor::Uninitialized storage filled with 0xFF bytes (NaN for floats) instead of left as the
  // allocator gave it: a kernel reading an output before writing it then fails its tests.
  bool poison_uninitialized = false;
  // Resize computes with ONNX Runtime's CPU arithmetic (float coordinates, its weight products
  // and rounding; kernels/resize_ort.h) instead of the spec formula in double, so that a
  // quantized model downstream of a Resize does not flip a rounding where ONNX Runtime does not.
  bool ort_compatible_resize = false;
};

// The program's defaults (threads 0: every core).
void SetDefaultExecution(const ExecutionEnv& env);
ExecutionEnv DefaultExecution();

// The settings in force on this thread: the innermost scope's, else the defaults. `threads` is
// always resolved (never 0).
ExecutionEnv CurrentExecution();

// Caller-owned memory the next matching tensor allocation of the running node goes to (what
// Session::RunInto binds, through ScopedOutputBuffer in lib/runtime/tensor.h).
struct PendingOutput {
  int32_t dtype = 0;  // 0: any
  size_t bytes = 0;   // 0: any size that fits
  void* data = nullptr;
  size_t capacity = 0;
  bool active = false;
};

// Makes `env` current on this thread for the scope's life; fields left at 0/false inherit the
// enclosing scope's (so a Session without its own thread count runs with its caller's). The scope
// also holds the run's pending output buffer: a run's state lives in its scope, the one
// thread-local is the pointer to the innermost scope.
class ScopedExecution {
 public:
  explicit ScopedExecution(const ExecutionEnv& env);
  ~ScopedExecution();
  ScopedExecution(const ScopedExecution&) = delete;
  ScopedExecution& operator=(const ScopedExecution&) = delete;

  const ExecutionEnv& env() const { return env_; }
  PendingOutput& pending_output() { return pending_; }

 private:
  ScopedExecution* previous_;
  ExecutionEnv env_;
  PendingOutput pending_;
};

// The innermost scope on this thread, or nullptr.
ScopedExecution* CurrentScope();

}  // namespace porttool::runtime
