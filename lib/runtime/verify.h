// Split verification: runs the original model and its segments chained in execution order, each
// segment fed from the original inputs and the tensors earlier segments produced (bridges are
// passed along by name), and requires the final outputs to be bit-identical to the original's —
// the executor is deterministic, so any difference means the split changed the computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {

struct VerifyResult {
  bool identical = true;
  std::vector<TensorComparison> outputs;  // per original output
  std::vector<std::string> problems;      // human-readable reasons when not identical
};

// Runs `original` and its chained segments (a ChainSession) on `inputs`. Throws Error(kBadInput)
// when a segment needs a tensor that neither the inputs nor an earlier segment provides, or an
// output comes from no segment (naming segment and tensor).
VerifyResult VerifyChain(const io::Model& original, const std::vector<const io::Model*>& segments,
                         const TensorMap& inputs, const SessionOptions& options = {});

// Same, with reproducible random inputs for the original model (static input dims required),
// drawn from `ranges` for the inputs it names.
VerifyResult VerifyChainRandom(const io::Model& original,
                               const std::vector<const io::Model*>& segments, uint64_t seed,
                               const SessionOptions& options = {},
                               const shape::InputRanges& ranges = {});

}  // namespace porttool::runtime
