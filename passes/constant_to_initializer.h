// constant-to-initializer (see constant_to_initializer.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ConstantToInitializerPass : public Pass {
 public:
  bool visits_subgraph_bodies() const override { return true; }
  std::string id() const override { return "constant-to-initializer"; }
  std::string summary() const override {
    return "Turn Constant nodes into initializers of the same name";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

// Turns the Constant nodes of `graph` and its subgraphs into initializers; notes what it kept.
// Returns the number of nodes converted. (fold-constants runs it every round.)
int ConstantsToInitializers(onnx::GraphProto& graph, std::vector<std::string>& notes);

}  // namespace porttool::passes
