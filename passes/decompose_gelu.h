// decompose-gelu and the Gelu forms gelu-to-tanh reuses (see decompose_gelu.cc).
#pragma once

#include "passes/pass.h"
#include "passes/pattern_util.h"

namespace porttool::passes {

class DecomposeGeluPass : public Pass {
 public:
  std::string id() const override { return "decompose-gelu"; }
  std::string summary() const override {
    return "com.microsoft Gelu/FastGelu/QuickGelu and ONNX Gelu -> standard ONNX ops";
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

// 0.5 * x * (1 + erf(x / sqrt(2))), written to `output`.
void EmitErfGelu(NodeEmitter& e, const std::string& x, const std::string& output);
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), written to `output`.
void EmitTanhGelu(NodeEmitter& e, const std::string& x, const std::string& output);

// Whether `node` is a Gelu this module handles (com.microsoft Gelu/FastGelu/QuickGelu, ONNX
// Gelu).
bool IsGeluNode(const onnx::NodeProto& node);

}  // namespace porttool::passes
