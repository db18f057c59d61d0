// scaffold-op: the whole custom-operator package for one node of a model, generated from one
// description (op.json: domain, type, inputs/outputs with dtype and rank, attributes with types
// and defaults, the shape rule, the layout). The package holds a C99 kernel without heap use
// (scratch passed in and sized by a generated function; SSE2 and NEON paths behind #if and a
// plain C fallback), real for the activations porttool knows and an explicit not-implemented
// skeleton otherwise; the porttool custom-op ABI glue that `--custom-op DIR` loads; an ONNX
// OpSchema registered through libonnx with its own shape-inference test; the op's test kit and a
// C test program printing "N passed, N failed"; the SDK adapters (scaffold_adapters.h); and a
// CMakeLists.txt building all of it (the adapters only when their SDK root is given). Output is
// deterministic (no dates, no absolute paths) and names the source model's sha256.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/emit/scaffold_adapters.h"
#include "lib/io/model.h"
#include "lib/runtime/kernel.h"
#include "lib/shape/custom_op_schema.h"

namespace porttool::emit {

struct ScaffoldOptions {
  std::string node;   // the node to scaffold (main graph)
  uint64_t seed = 0;  // for the kit's random model inputs
  // SDK adapters to generate (AdapterTargets() names): ort, rknn, tensorrt, tflm.
  std::vector<std::string> targets = AdapterTargets();
  // Replace an existing output directory (io::CheckOutputDir's rule: only one porttool wrote).
  bool replace = false;
  // Inputs of the run besides the model and its data files, which the output directory must not
  // hold either.
  std::vector<std::filesystem::path> other_inputs{};
};

struct ScaffoldResult {
  shape::CustomOpSpec spec;
  std::vector<std::string> files;  // relative to the output directory, sorted
  std::vector<std::string> notes;
};

// The op description of `node_name` in `model` (whose input shapes should be pinned: shapes come
// from inference, then from one executor run when inference leaves them unknown).
shape::CustomOpSpec DescribeNode(const io::Model& model, const std::string& node_name);

// Writes the package into `out_dir`, all of it or nothing: it is built beside `out_dir` and
// renamed into place once, replacing an existing directory whole only under io::CheckOutputDir's
// rule. Throws Error(kUsage) for an unknown node (naming close matches) and for an `out_dir` the
// rule refuses, Error(kBadInput) when the model cannot be analysed or the package not written.
ScaffoldResult ScaffoldOp(const io::Model& model, const ScaffoldOptions& options,
                          const std::filesystem::path& out_dir);

// Whether porttool writes a working kernel (not a skeleton) for this op type.
bool HasKnownKernel(const std::string& op_type);

// The template variables of an op's package ({{sym}}, {{Op}}, {{domain}}, the parameter struct's
// fields, ...): what every generated file of ScaffoldOp, adapters included, is filled from.
ScaffoldVars TemplateVarsFor(const shape::CustomOpSpec& spec);

}  // namespace porttool::emit
