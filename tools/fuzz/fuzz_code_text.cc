// libFuzzer entry point; the body (FuzzCodeText) is in targets.cc, shared with the
// replay test of the normal build. A finding aborts so libFuzzer keeps the input.
#include "tools/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return porttool::fuzz::AbortOnFinding(porttool::fuzz::FuzzCodeText(data, size));
}
