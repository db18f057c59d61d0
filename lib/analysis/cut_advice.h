// Cut advice for a split: where a segment boundary bridges more bytes than a threshold, the cut
// points nearby that would bridge less (e.g. before an Expand rather than after it). It reads the
// split's segments and the model's structure and types; it never runs the model. Tensor lifetimes
// come from the one liveness computation (liveness.h): a tensor crosses a boundary when it is
// produced before it and last read after it.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/split.h"

namespace porttool::analysis {

struct CutAdviceOptions {
  uint64_t bridge_warn_bytes = uint64_t{1} << 20;  // fits a last-level cache
  int window = 8;                                  // nodes searched on each side of a cut
};

// Advice for every boundary of `split` (made from `model` by ir::SplitModel) that a bridge over
// the threshold crosses, in boundary order. Sizes of tensors the model does not type come from
// shape inference on a copy (ir::TensorTypes with shape::TypeInference()).
std::vector<ir::CutAdvice> AdviseCuts(const io::Model& model, const ir::SplitResult& split,
                                      const CutAdviceOptions& options = {});

}  // namespace porttool::analysis
