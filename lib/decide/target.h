// Target profiles (rules/targets/*.json): what a deployment target is (hardware class, memory,
// alignment, dtypes, opset range, dynamic-shape support, compute rate) and which ONNX ops it runs
// where, in the style of Arm Vela's supported-ops report: generic constraints for every op plus
// specific constraints per op, each a human sentence with its source and a machine check, plus the
// converter's documented lowerings (an op it rewrites into ops the accelerator runs). An op that
// neither passes its accelerator constraints nor meets a lowering's conditions goes to the CPU
// fallback (when the target has one and the op is on it) or is unsupported. Loading validates every
// field and every op name (against ONNX's schema registry, or the profile's own domain-qualified
// ops) with file/line/pointer errors.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/decide/json_file.h"
#include "lib/shape/input_values.h"

namespace porttool::decide {

class AnalyzedModel;

// A machine-checkable constraint: `kind` picks the check, `params` holds its arguments.
// Kinds: attr_in, attr_range, attrs_unset, axis_in, input_rank, max_rank, batch, input_absent,
// input_constant, inputs_constant, resize_scale, static_shapes, reduce_axes, layer_norm_pattern
// (see docs/facts.md "Targets"). Attribute checks compare effective values (effective_attr.h).
struct Check {
  std::string kind;
  nlohmann::json params;
};

struct Constraint {
  std::string id;
  std::string text;    // the human sentence
  std::string source;  // document and section
  Check check;
};

// Result of a check on one node: passed, failed (with a detail such as "mode is 'cubic'"), or
// not verifiable (a shape or constant it needs is unknown: counted as passed, listed).
struct CheckResult {
  enum class Status { kPass, kFail, kUnverified };
  Status status = Status::kPass;
  std::string detail;
};

// Validates a check's parameters; `pointer` locates it in `file` for errors.
Check ParseCheck(const JsonFile& file, const std::string& pointer);
CheckResult RunCheck(const Check& check, const AnalyzedModel& model, int node_index);
// RunCheck on `variant` standing in for node `node_index` (same inputs and outputs, its own
// attributes): what a rule decides for each value an attribute may take.
CheckResult RunCheckOnVariant(const Check& check, const AnalyzedModel& model, int node_index,
                              const onnx::NodeProto& variant);

// A documented rewrite by the vendor's converter that lets the accelerator run an op it does not
// list under that name: rknn-toolkit2 turns a Gemm with a constant B into its Convolution. A node
// of `op` whose `conditions` all pass runs on the accelerator as `becomes` (accelerator ops of
// the same profile); the conditions replace the op constraints of `becomes`, the generic
// constraints still apply. A condition that cannot be verified (unknown shape) does not hold.
struct Lowering {
  std::string id;
  std::string op;                    // OpKey
  std::vector<std::string> becomes;  // OpKeys the accelerator runs
  std::vector<Check> conditions;
  std::string text;
  std::string source;
};

// The vendor tool that takes an accelerator segment from the bundle to the device (the profile's
// "vendor_tool"), in the tool's own words: port writes its command lines from templates
// (lib/emit/templates/<tool>/) filled with these values, each traced to `source`.
struct VendorTool {
  std::string tool;     // rknn-toolkit2 | trtexec | stedgeai | none (the segments load as they are)
  std::string version;  // of the tool the values are for
  std::string platform;  // the tool's name for the target (target_platform, --target)
  // What the target computes unquantized segments in; empty: no float arithmetic at all, so a
  // port without calibration has no step to the device.
  std::string float_precision;
  // Nodes porttool kept "float" or raised to "int16", in the precision the tool gives them;
  // a missing entry: the tool has none for them.
  std::map<std::string, std::string> raised_precision;
  std::string source, text;
};

struct TargetProfile {
  std::string name;
  std::string title;
  std::string file;
  nlohmann::json sources;  // [{document, toolkit, location}]
  std::vector<std::string> notes;
  // hardware
  std::string hardware_class;
  uint64_t ram_bytes = 0;
  uint64_t flash_bytes = 0;
  double usable_fraction = 0.7;
  bool weights_in_ram = true;
  bool has_host_cpu = true;
  std::string onnx_toolchain;  // the deployment toolchain that imports ONNX; empty when none
  uint64_t alignment_bytes = 1;
  std::vector<std::string> dtypes;
  std::string weight_dtype;      // what the converter stores weights as
  std::string activation_dtype;  // and runs activations in
  // What the accelerator computes an unquantized model in: "fp16", "fp32", or "none" (it runs
  // quantized models only); empty when the profile does not say. With its source and sentence.
  std::string float_arithmetic;
  std::string float_arithmetic_source, float_arithmetic_text;
  int64_t opset_min = 1;
  int64_t opset_max = 1000;
  std::string dynamic_support;  // none, shape-sets, profiles, full
  std::string dynamic_text;
  double peak_macs_per_s = 0;
  double efficiency = 0;
  std::string compute_source;
  // split --auto's cost model (0: the partitioner's documented default); see "pipeline".
  double host_macs_per_s = 0;
  double bridge_bytes_per_s = 0;
  double switch_ms = -1;
  std::string pipeline_source;
  // port: the exact rewrites this target's converter needs, as a pipeline string of pass ids
  // ("convert-opset{min=12,max=19},resize-nearest-half-pixel"), and the input shape port pins when
  // none is given ("NAME:DIMS[,...]", NAME "*" for any input of that rank). Their pass ids and
  // syntax are checked by lib/stages (decide knows no passes); errors name the profile file that
  // set each (this one or the one it extends).
  std::string rewrites;
  std::string rewrites_file;
  std::string default_input_shape;
  std::string default_input_shape_file;
  // Inputs whose value the deployment fixes ("input_values": {"sr": 16000}): port makes those of
  // a model's inputs constants before simplifying (a value the user gives wins).
  shape::InputValues input_values;
  // The generated runner's backend for this target's accelerator segments besides porttool's
  // reference one: "rknn" (librknnrt), or empty when porttool has none for it.
  std::string runner_backend;
  std::optional<VendorTool> vendor_tool;  // absent: no known step from the bundle to the device
  // ops
  enum class Fallback { kAll, kList, kNone };
  Fallback fallback = Fallback::kNone;
  std::set<std::string> fallback_ops;
  bool accelerator_all_onnx = false;  // "*": every ai.onnx op the registry knows
  std::set<std::string> accelerator_ops;
  std::set<std::string> accelerator_exclude;
  std::set<std::string> unsupported_ops;
  std::string unsupported_reason;
  std::vector<Constraint> generic_constraints;
  std::map<std::string, std::vector<Constraint>> op_constraints;
  std::map<std::string, std::vector<Constraint>> cpu_constraints;
  std::vector<Lowering> lowerings;  // in file order; the first that applies is used
  std::string lowerings_file;       // the profile file that set them (this one or its parent)

  bool AcceleratorHas(const std::string& op_key) const;
  bool FallbackHas(const std::string& op_key) const;
};

// Loads and validates a profile file; `extends` names another profile in the same directory whose
// top-level fields this one inherits (fields present here replace the parent's).
TargetProfile LoadTargetFile(const std::filesystem::path& path);
// A target by name (<rules_dir>/targets/<name>.json) or by path to a profile JSON (anything
// with a '/' or ending in .json). An unknown name is Error(kUsage) listing the shipped targets
// and a close match when there is one.
TargetProfile LoadTarget(const std::filesystem::path& rules_dir, const std::string& name_or_path);
std::vector<std::string> TargetNames(const std::filesystem::path& rules_dir);

// Whether `op_key` ("Conv", "com.microsoft:Gelu") names an op: ai.onnx ops must be known to
// ONNX's schema registry (or be newer ONNX ops listed in porttool's table); other domains are
// accepted only if `declared` contains them.
bool IsKnownOp(const std::string& op_key, const std::set<std::string>& declared);

}  // namespace porttool::decide
