// fuse-conv-mul (see fuse_conv_mul.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class FuseConvMulPass : public Pass {
 public:
  std::string id() const override { return "fuse-conv-mul"; }
  std::string summary() const override {
    return "Fold a constant per-channel Mul after a Conv/ConvTranspose into its weights and bias";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
