// topo-sort pass (see topo_sort.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class TopoSortPass : public Pass {
 public:
  std::string id() const override { return "topo-sort"; }
  std::string summary() const override { return "Reorder nodes into a topological order"; }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
