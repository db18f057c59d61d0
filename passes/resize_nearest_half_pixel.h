// resize-nearest-half-pixel (see resize_nearest_half_pixel.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ResizeNearestHalfPixelPass : public Pass {
 public:
  std::string id() const override { return "resize-nearest-half-pixel"; }
  std::string summary() const override {
    return "Nearest Resize asymmetric+floor -> half_pixel where integer scales make it identical";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
