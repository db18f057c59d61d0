// Custom-operator packages (scaffold-op output) loaded for one stage run. Schemas are registered
// with libonnx on load, so checks and shape inference know the op; with kernels, each package's
// built library is loaded and `kernels` (built-in + custom, the custom kernel replacing a
// built-in one of the same op) is what sessions get; `fill_kernels` only adds ops the executor
// lacks (the reference side of compare). Every stage that takes `--custom-op` goes through here.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/custom_op_library.h"
#include "lib/runtime/kernel.h"

namespace porttool::stages {

struct CustomOps {
  runtime::CustomOpSet set;
  runtime::KernelRegistry kernels;
  runtime::KernelRegistry fill_kernels;
  // Null when no package was given, so sessions use the built-in registry.
  const runtime::KernelRegistry* Kernels() const { return set.empty() ? nullptr : &kernels; }
  const runtime::KernelRegistry* FillKernels() const {
    return set.empty() ? nullptr : &fill_kernels;
  }
};

// Loads `dirs` and checks `model` (when given) against each op.json. `with_kernels` false: only
// op.json and the schema (check, infer-shapes). Errors are Error(kBadInput).
std::unique_ptr<CustomOps> LoadCustomOps(const std::vector<std::filesystem::path>& dirs,
                                         const io::Model* model, bool with_kernels);

}  // namespace porttool::stages
