// name-nodes pass (see name_nodes.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class NameNodesPass : public Pass {
 public:
  std::string id() const override { return "name-nodes"; }
  std::string summary() const override {
    return "Give every unnamed node a unique name <op>_<position> (suffixed until unique)";
  }
  bool visits_subgraph_bodies() const override { return true; }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
