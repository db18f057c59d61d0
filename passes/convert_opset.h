// convert-opset (see convert_opset.cc for the Before/After).
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class ConvertOpsetPass : public Pass {
 public:
  std::string id() const override { return "convert-opset"; }
  std::string summary() const override {
    return "Convert the ONNX opset with libonnx's version converter (adapter gaps handled)";
  }
  std::vector<OptionHelp> options() const override {
    return {
        {"to", "target opset version", kOpsetRange},
        {"min", "or: raise the opset to at least this (a target's supported range)", kOpsetRange},
        {"max", "and/or: lower it to at most this; a model inside [min, max] is left alone",
         kOpsetRange}};
  }
  PassResult Run(io::Model& model, const PassOptions& options, PassContext& context) const override;
};

}  // namespace porttool::passes
