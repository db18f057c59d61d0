// Per-operator test kits, the "minimal unit test first" step of every port: for one node, every
// node of an op type, or one node per distinct (op, attributes, input shapes) of a model, a
// folder in the ONNX backend-test layout (single-node model.onnx with the node's real attributes
// and domain, test_data_set_N/input_i.pb and output_i.pb) plus kit.json (op, attributes, dtypes,
// shapes, layout, seed, tolerance by op class) and a C header with the same tensors as aligned
// arrays for boards without a file system. Inputs are the node's real inputs, captured through the
// executor's observer while the whole model runs on random inputs or on given samples; expected
// outputs come from the executor running the kit's own model. CheckKit judges a board's outputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/session.h"

namespace porttool::emit {

struct KitOptions {
  enum class Select { kNode, kOp, kAll };
  Select select = Select::kAll;
  std::string name;  // node name (kNode) or op type (kOp)
  uint64_t seed = 0;
  // Model inputs, one map per test_data_set; empty: one set of random inputs from `seed`.
  std::vector<runtime::TensorMap> samples;
  // Tensors above this many bytes in total leave the kit without a C header (kit.json says so).
  uint64_t header_max_bytes = 4u << 20;
  const runtime::KernelRegistry* kernels = nullptr;  // null: built-in kernels
};

struct KitSummary {
  std::string dir;  // folder name under the output directory
  std::string op;
  std::string node;
  std::vector<std::string> notes;
};

// Writes one folder per kit under `out_dir` (created). Throws Error(kUsage) when --node/--op
// selects nothing (naming close matches), Error(kBadInput) when the model cannot run.
std::vector<KitSummary> MakeKits(const io::Model& model, const KitOptions& options,
                                 const std::filesystem::path& out_dir);

// Tolerance for an op and output dtype: {"kind": bitwise|float|float-reduction|transcendental|int8,
// rtol, atol}; an output passes where every |got - want| <= atol + rtol * |want|.
// float-reduction (Conv, ConvTranspose, MatMul, Gemm, float outputs) also carries atol_base and
// unit_roundoff; WithReductionBound makes its atol final.
nlohmann::json ToleranceFor(const std::string& op_type, int32_t dtype);

// A float-reduction tolerance for an op summing `reduction_length` (K) products per output
// element, whose |products| add up to at most `max_abs_terms` (M) in any element:
// atol = atol_base + 2 * sqrt(K) * u * M. A float sum's error scales with its terms, not with the
// result, so a near-cancelling element (a small sum of large terms) fails any rtol; sqrt(K) * u * M
// is the probabilistic bound on one result's error, and both the expected and the judged outputs
// carry one. Adds reduction_length, max_abs_terms, rule and note to `tol`.
nlohmann::json WithReductionBound(nlohmann::json tol, int64_t reduction_length,
                                  double max_abs_terms);

struct KitCheckRow {
  std::string kit, set, output;
  bool passed = false;
  std::string detail;  // worst element, or why the output could not be judged
};
struct KitCheckResult {
  std::vector<KitCheckRow> rows;
  int passed = 0, failed = 0;
};
// Judges outputs in `outputs_dir` against the kit(s) in `kit_dir` (one kit, or a folder of kits
// with one sub-folder of outputs per kit). An output is looked up as
// test_data_set_N/output_i.pb, then (set 0) output_i.pb, <name>.pb and <name>.npy.
KitCheckResult CheckKits(const std::filesystem::path& kit_dir,
                         const std::filesystem::path& outputs_dir);

}  // namespace porttool::emit
