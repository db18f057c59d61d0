// check as a pass, so a chain can stop on a broken model: the ONNX checker and the porting
// lints (lib/analysis/check.h), every finding a note; the chain stops (result.failed) on an
// error-level finding. It only reports: the model is left as it was.
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class CheckPass : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "check"; }
  std::string summary() const override {
    return "ONNX checker + porting lints; stops the chain on an error-level finding";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
