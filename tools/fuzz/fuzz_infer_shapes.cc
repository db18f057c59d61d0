// Bytes -> `porttool infer-shapes` (fixed point with data propagation and contrib schemas).
#include "lib/shape/infer.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    shape::InferShapes(model);
  });
}
