#include "lib/runtime/verify.h"

#include <fmt/format.h>

#include "lib/util/error.h"

namespace porttool::runtime {

VerifyResult VerifyChain(const io::Model& original, const std::vector<const io::Model*>& segments,
                         const TensorMap& inputs, const SessionOptions& options) {
  std::vector<NamedTensor> expected;
  {
    Session session(original, options);
    expected = session.Run(inputs);
  }
  TensorMap pool = inputs;  // everything available to later segments, by name
  for (size_t i = 0; i < segments.size(); ++i) {
    Session session(*segments[i], options);
    TensorMap feed;
    for (const auto& spec : session.inputs()) {
      auto it = pool.find(spec.name);
      if (it == pool.end()) {
        throw Error(ErrorKind::kBadInput,
                    fmt::format("segment {} needs '{}', which neither the model inputs nor an "
                                "earlier segment provides",
                                i + 1, spec.name),
                    "", spec.name);
      }
      feed[spec.name] = it->second;
    }
    for (auto& out : session.Run(feed)) pool[out.name] = std::move(out.value);
  }
  VerifyResult result;
  for (const auto& e : expected) {
    auto it = pool.find(e.name);
    if (it == pool.end()) {
      result.identical = false;
      result.problems.push_back(fmt::format("output '{}' is produced by no segment", e.name));
      continue;
    }
    TensorStats stats = CompareTensors(e.value, it->second, 0, 0);
    bool same = stats.comparable && stats.max_abs == 0 && e.value.dtype() == it->second.dtype();
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
                               const SessionOptions& options) {
  TensorMap inputs;
  {
    Session session(original, options);
    inputs = RandomInputs(session, seed);
  }
  return VerifyChain(original, segments, inputs, options);
}

}  // namespace porttool::runtime
