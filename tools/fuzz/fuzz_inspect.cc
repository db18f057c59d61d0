// Bytes -> `porttool inspect` facts (histogram, params, MACs), which never read weights.
#include "lib/analysis/macs.h"
#include "lib/analysis/model_facts.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  return fuzz::Guard([&] {
    io::Model model = fuzz::LoadBytes(fuzz::AsView(data, size));
    analysis::CollectFacts(model);
  });
}
