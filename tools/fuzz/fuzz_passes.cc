// Bytes -> `porttool chain`: the first byte chooses a pipeline of registered passes (each bit of
// it switches one pass on, in registry order, then the order is rotated by the high bits), the
// rest is the model. Covers the graph passes and the stages registered as passes.
#include "passes/pipeline.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  uint8_t choice = fuzz::Selector(data, size);
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    const auto& registry = passes::Registry();
    std::vector<passes::PipelineStep> steps;
    for (size_t i = 0; i < registry.size(); ++i) {
      size_t k = (i + (choice >> 5)) % registry.size();
      if (choice & (1u << (k % 5))) steps.push_back({registry[k]->id(), {}});
    }
    passes::RunPipeline(model, steps);
  });
}
