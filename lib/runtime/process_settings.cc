#include "lib/runtime/process_settings.h"

#include <malloc.h>

#include "lib/runtime/execution.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {

void ApplyProcessSettings(const ProcessSettings& settings) {
  if (settings.threads > 0) SetNumThreads(settings.threads);
  if (settings.ort_compatible_resize) {
    ExecutionEnv env = DefaultExecution();
    env.ort_compatible_resize = true;
    SetDefaultExecution(env);
  }
  // glibc serves large blocks with mmap and unmaps them on free, so every intermediate of every
  // run would page-fault fresh zeroed memory: on PP-OCRv4 det that was 75% of the run time.
  // Keeping freed blocks in the heap lets the next tensor reuse them; peak RSS is unchanged
  // because intermediates are freed after their last use either way.
  if (settings.keep_freed_memory) {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
}

}  // namespace porttool::runtime
