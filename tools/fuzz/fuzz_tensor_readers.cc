// libFuzzer entry point of tensor_readers; the body is FuzzTensorReaders in targets.cc.
#include "tools/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return porttool::fuzz::AbortOnFinding(porttool::fuzz::FuzzTensorReaders(data, size));
}
