// Bytes -> `porttool check`: ONNX checker, strict shape inference and the porting lints.
#include "lib/analysis/check.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    analysis::CheckModel(model);
  });
}
