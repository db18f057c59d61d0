// Bytes -> io::Load: protobuf parsing, structural checks, external-data path validation.
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  return fuzz::Guard([&] { fuzz::LoadBytes(fuzz::AsView(data, size)); });
}
