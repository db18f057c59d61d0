// eliminate-identity pass (see eliminate_identity.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class EliminateIdentityPass : public Pass {
 public:
  std::string id() const override { return "eliminate-identity"; }
  std::string summary() const override {
    return "Remove Identity and inference-mode Dropout nodes, reconnecting their consumers";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
