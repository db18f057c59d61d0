// fold-constants (see fold_constants.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class FoldConstantsPass : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "fold-constants"; }
  std::string summary() const override {
    return "Evaluate nodes whose inputs are all constant (shape chains too), to a fixed point";
  }
  std::vector<OptionHelp> options() const override {
    return {{"input-shape", "pin input dims first so shape chains fold: NAME:DIMS[,NAME:DIMS]"},
            {"max-tensor-bytes", "largest folded tensor (default 1048576)", kBytesRange},
            {"max-rounds", "fixed-point cap (default 8)", kIntRange}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
