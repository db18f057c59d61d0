// Stages that wrap library functions as passes so they can take part in a chain:
// infer-shapes (lib/shape) and check (lib/analysis). They change the model (infer-shapes) or
// only report (check: fails the chain when an error-level finding is present).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class InferShapesStage : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "infer-shapes"; }
  std::string summary() const override {
    return "ONNX shape inference with data propagation, to a fixed point";
  }
  std::vector<OptionHelp> options() const override {
    return {{"input-shape", "pin input dims first: NAME:DIMS[,NAME:DIMS...]"},
            {"max-iterations", "fixed-point cap (default 8)"}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

class CheckStage : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "check"; }
  std::string summary() const override {
    return "ONNX checker + porting lints; stops the chain on an error-level finding";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
