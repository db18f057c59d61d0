#include "lib/runtime/verify.h"

#include <fmt/format.h>

#include "lib/runtime/chain.h"
#include "lib/util/error.h"

namespace porttool::runtime {

VerifyResult VerifyChain(const io::Model& original, const std::vector<const io::Model*>& segments,
                         const TensorMap& inputs, const SessionOptions& options) {
  Session session(original, options);
  std::vector<NamedTensor> expected = session.Run(inputs);
  ChainSession chain(segments, session.inputs(), session.output_names(), options);
  std::vector<NamedTensor> chained = chain.Run(inputs);
  VerifyResult result;
  for (size_t i = 0; i < expected.size(); ++i) {
    const NamedTensor& e = expected[i];
    const Tensor& got = chained[i].value;
    TensorStats stats = CompareTensors(e.value, got, 0, 0);
    bool same = stats.comparable && stats.max_abs == 0 && e.value.dtype() == got.dtype();
    if (!same) {
      result.identical = false;
      result.problems.push_back(
          stats.comparable
              ? fmt::format("output '{}' differs (max abs {:.3g})", e.name, stats.max_abs)
              : fmt::format("output '{}': {}", e.name, stats.note));
    }
    result.outputs.push_back({e.name, "", "", stats});
  }
  return result;
}

VerifyResult VerifyChainRandom(const io::Model& original,
                               const std::vector<const io::Model*>& segments, uint64_t seed,
                               const SessionOptions& options, const shape::InputRanges& ranges) {
  TensorMap inputs;
  {
    Session session(original, options);
    inputs = RandomInputs(session, seed, ranges);
  }
  return VerifyChain(original, segments, inputs, options);
}

}  // namespace porttool::runtime
