// eliminate-dead-code (see eliminate_dead_code.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class EliminateDeadCodePass : public Pass {
 public:
  std::string id() const override { return "eliminate-dead-code"; }
  std::string summary() const override {
    return "Remove nodes whose outputs reach no graph output";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
