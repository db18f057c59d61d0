// fuse-conv-bn (see fuse_conv_bn.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class FuseConvBnPass : public Pass {
 public:
  std::string id() const override { return "fuse-conv-bn"; }
  std::string summary() const override {
    return "Fold an inference BatchNormalization into the Conv/ConvTranspose before it";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
