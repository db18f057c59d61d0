// fuse-conv-add (see fuse_conv_add.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class FuseConvAddPass : public Pass {
 public:
  std::string id() const override { return "fuse-conv-add"; }
  std::string summary() const override {
    return "Fold a constant per-channel Add after a Conv/ConvTranspose into its bias";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
