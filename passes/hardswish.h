// fuse-hardswish and decompose-hardswish (see hardswish.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class FuseHardSwishPass : public Pass {
 public:
  std::string id() const override { return "fuse-hardswish"; }
  std::string summary() const override {
    return "x * HardSigmoid(x) or x * relu6(x + 3) / 6 -> HardSwish (opset 14+)";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

class DecomposeHardSwishPass : public Pass {
 public:
  std::string id() const override { return "decompose-hardswish"; }
  std::string summary() const override {
    return "HardSwish -> x * HardSigmoid(x), for targets without HardSwish";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
