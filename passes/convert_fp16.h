// convert-fp16 (see convert_fp16.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ConvertFp16Pass : public Pass {
 public:
  std::string id() const override { return "convert-fp16"; }
  std::string summary() const override {
    return "Store float32 weights and tensors as float16; ops ONNX Runtime's CPU provider has no "
           "float16 kernel for run in float32 between Casts";
  }
  std::vector<OptionHelp> options() const override {
    return {{"keep", "nodes that stay float32 (weights too), by name: NODE[,NODE...]"},
            {"io",
             "fp32 (default: graph inputs and outputs stay float32, Casts at the edges) "
             "or fp16 (they become float16)"}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
