// infer-shapes as a pass, so it can take part in a chain: the shape completion every subcommand
// uses (lib/runtime/shape_completion.h: ONNX shape inference with data propagation to a fixed
// point, then one executor run for what it cannot follow). It annotates the model (value_info)
// and never counts as a change, so it never keeps a fixed-point loop going.
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class InferShapesPass : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "infer-shapes"; }
  std::string summary() const override {
    return "ONNX shape inference with data propagation to a fixed point, then one executor run "
           "for the shapes it cannot follow";
  }
  std::vector<OptionHelp> options() const override {
    return {{"input-shape", "pin input dims first: NAME:DIMS[,NAME:DIMS...]"},
            {"max-iterations", "fixed-point cap (default 8)", kIntRange}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
