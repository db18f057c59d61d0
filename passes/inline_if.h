// inline-if (see inline_if.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class InlineIfPass : public Pass {
 public:
  std::string id() const override { return "inline-if"; }
  std::string summary() const override {
    return "Replace an If whose condition is constant by its taken branch (renamed, nested "
           "Ifs too)";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
