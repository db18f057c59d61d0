// libFuzzer entry point; the body (FuzzInspect) is in targets.cc, shared with the
// replay test of the normal build. A finding aborts so libFuzzer keeps the input.
#include "tools/fuzz/model_mutator.h"
#include "tools/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return porttool::fuzz::AbortOnFinding(porttool::fuzz::FuzzInspect(data, size));
}

// Structure-aware mutations (model_mutator.h); 0 selector byte(s) lead the input.
PORTTOOL_FUZZ_MODEL_MUTATOR(0)
