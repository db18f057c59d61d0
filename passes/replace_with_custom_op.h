// replace-with-custom-op (see replace_with_custom_op.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ReplaceWithCustomOpPass : public Pass {
 public:
  std::string id() const override { return "replace-with-custom-op"; }
  std::string summary() const override {
    return "Turn a node or a connected set of nodes into one custom-domain op";
  }
  std::vector<OptionHelp> options() const override {
    return {{"node", "node name or '#N', or several quoted and comma-separated: node='a,#3'"},
            {"domain", "custom domain, e.g. com.example"},
            {"op", "custom op type, e.g. MyGelu"}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
