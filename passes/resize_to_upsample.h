// resize-to-upsample (see resize_to_upsample.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ResizeToUpsamplePass : public Pass {
 public:
  std::string id() const override { return "resize-to-upsample"; }
  std::string summary() const override {
    return "Resize -> Upsample where the semantics are identical (for vendor converters)";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
