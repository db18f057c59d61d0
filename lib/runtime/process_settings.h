// Process-wide executor settings: the kernels' thread count and the allocator policy. They belong
// to the program, not to a Session, so the program (the CLI) applies them once before creating
// sessions; a library user that never calls this gets all cores and the default allocator.
#pragma once

namespace porttool::runtime {

struct ProcessSettings {
  int threads = 0;  // kernels' thread count; 0 keeps the current setting (all cores)
  // Keep freed tensor memory in the heap instead of returning it to the OS after every node:
  // repeated runs then reuse pages (PP-OCRv4 det: 440 ms -> ~150 ms at 1 thread).
  bool keep_freed_memory = true;
  // Every session of the program computes Resize with ONNX Runtime's arithmetic
  // (ExecutionEnv::ort_compatible_resize); false keeps the current setting.
  bool ort_compatible_resize = false;
};

void ApplyProcessSettings(const ProcessSettings& settings);

}  // namespace porttool::runtime
