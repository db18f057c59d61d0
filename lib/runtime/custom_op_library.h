// Loading scaffolded custom ops into the executor: `--custom-op DIR` names a scaffold-op package;
// its op.json registers the op's ONNX schema (checker, shape inference) and the shared library
// its CMake builds (lib/runtime/custom_op_abi.h, a small versioned C ABI) becomes the kernel for
// that (domain, op). Nothing is process-wide except libonnx's schema registry: callers get a
// KernelRegistry to hand to their sessions, and the set keeps the libraries loaded while it lives.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/shape/custom_op_schema.h"

namespace porttool::runtime {

struct LoadedCustomOp {
  shape::CustomOpSpec spec;
  std::filesystem::path dir;
  std::filesystem::path library;
  // Keeps the library loaded while any kernel made from it lives; get() is its pt_custom_op.
  std::shared_ptr<void> handle;
};

class CustomOpSet {
 public:
  // Loads the package in `dir`: op.json, its schema, and the built library (DIR/build/ or DIR/).
  // Throws Error(kBadInput) naming the directory or file for a missing op.json or library, an
  // ABI version mismatch, or a library whose (domain, op) differs from op.json.
  void Load(const std::filesystem::path& dir);
  bool empty() const { return ops_.empty(); }
  const std::vector<LoadedCustomOp>& ops() const { return ops_; }

  // Default() plus the custom kernels. `override_builtin`: the custom kernel replaces a built-in
  // one of the same (domain, op); otherwise it only fills ops the executor lacks.
  KernelRegistry MakeRegistry(bool override_builtin) const;
  // CheckModelAgainstSpec for every loaded op.
  void CheckModel(const onnx::ModelProto& model) const;

 private:
  std::vector<LoadedCustomOp> ops_;
};

// The file name the package's CMake gives the library: libporttool_<symbol>.so.
std::string CustomOpLibraryName(const std::string& symbol);

}  // namespace porttool::runtime
