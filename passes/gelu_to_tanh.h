// gelu-to-tanh (see gelu_to_tanh.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class GeluToTanhPass : public Pass {
 public:
  std::string id() const override { return "gelu-to-tanh"; }
  std::string summary() const override {
    return "Replace exact (Erf) Gelu by the tanh approximation; reports the max deviation";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

// The largest |erf form - tanh form| over [-lo, hi] sampled every `step`.
double MaxTanhGeluDeviation(double lo, double hi, double step);

}  // namespace porttool::passes
