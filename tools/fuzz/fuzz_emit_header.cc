// Bytes -> `porttool emit-header`: shape inference, then the arena plan, the weight blob and the
// header, written to a scratch directory.
#include "lib/emit/emit_header.h"
#include "lib/shape/infer.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  bool arena = fuzz::Selector(data, size) & 1;
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    shape::InferShapes(model);
    emit::EmitRequest request;
    request.header_path = fuzz::ScratchDir() / "model.h";
    request.weights_path = fuzz::ScratchDir() / "weights.bin";
    request.prefix = "m";
    request.arena = arena;
    emit::EmitHeaderFiles(model, request);
  });
}
