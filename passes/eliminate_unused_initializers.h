// eliminate-unused-initializers (see eliminate_unused_initializers.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class EliminateUnusedInitializersPass : public Pass {
 public:
  std::string id() const override { return "eliminate-unused-initializers"; }
  std::string summary() const override { return "Remove initializers that nothing reads"; }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
