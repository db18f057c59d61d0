// Bytes -> `porttool split`: the first two bytes choose which nodes become host nodes (a bit
// pattern repeated over the graph), the rest is the model. The segments are built and written.
#include "lib/ir/split.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  uint16_t pattern = fuzz::Selector(data, size);
  pattern = static_cast<uint16_t>(pattern << 8 | fuzz::Selector(data, size));
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    std::vector<bool> host(model.proto.graph().node_size());
    for (size_t i = 0; i < host.size(); ++i) host[i] = (pattern >> (i % 16)) & 1;
    ir::SplitResult result = ir::SplitModel(model, host);
    auto dir = fuzz::ScratchDir() / "split";
    ir::WriteSplit(result, model, dir);
  });
}
