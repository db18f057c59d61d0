// scaffold-op's SDK adapters: ONNX Runtime (a custom-op library over the OrtCustomOp C struct,
// with RegisterCustomOps as its only exported symbol and a compile-only stub of the C API),
// RKNN (the runtime's compute callback and the toolkit's Python class), TensorRT (an IPluginV3
// plugin named, versioned and namespaced like the node) and TFLite Micro (a registration with
// prepare/invoke). Each is a thin layer over the package's kernel (kernel/<op>.{h,c}), with a
// README giving the load step and the model patch, and a CMake block that builds it only when the
// SDK's root is given. Generated text depends on the op description alone (deterministic).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/shape/custom_op_schema.h"

namespace porttool::emit {

using ScaffoldVars = std::vector<std::pair<std::string, std::string>>;

// Fills "{{name}}" placeholders in a template: the one filler of every generated file. A
// placeholder left unfilled (a template naming a variable nobody set) is porttool's bug, not the
// user's, and fails here with an InternalError naming it instead of shipping "{{name}}" in a
// generated file. "{{name|filter}}" passes the value through an escaper of code_text.h for the
// language at that spot: c_comment, c_string (literal body), py_string (literal body), cmake
// (quoted argument), line_comment (after '#'), sh (one word), json, md. Variables holding model
// text (Op, domain, node, model, ort_domain, ort_model, trt_model, trt_version, trt_namespace)
// must have one: a bare "{{Op}}" is an InternalError too, so no template writes a name as code.
std::string FillTemplate(std::string_view templ, const ScaffoldVars& vars);

// "ort", "rknn", "tensorrt", "tflm", in the order they are generated.
const std::vector<std::string>& AdapterTargets();

// Parses a comma-separated list of adapter targets ("all" or empty: every one). Throws
// Error(kUsage) naming the valid targets for an unknown one. The result is in AdapterTargets()
// order, without duplicates.
std::vector<std::string> ParseAdapterTargets(const std::string& list);

// The files of one adapter (paths relative to the package root) and the CMake block that builds
// it, appended to the package's CMakeLists.txt.
struct AdapterFiles {
  std::map<std::string, std::string> files;
  std::string cmake;
};

// `formula` is the known kernel's @-formula (empty for a skeleton op); `bias`: the op adds an
// optional bias input along the last axis first (FastGelu).
AdapterFiles GenerateAdapter(const std::string& target, const shape::CustomOpSpec& spec,
                             const ScaffoldVars& vars, const std::string& formula, bool bias);

}  // namespace porttool::emit
