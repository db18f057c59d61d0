// Target profiles (rules/targets/*.json): what a deployment target is (hardware class, memory,
// alignment, dtypes, opset range, dynamic-shape support, compute rate) and which ONNX ops it runs
// where, in the style of Arm Vela's supported-ops report: generic constraints for every op plus
// specific constraints per op, each a human sentence with its source and a machine check. An op
// that fails its accelerator constraints goes to the CPU fallback (when the target has one and
// the op is on it) or is unsupported. Loading validates every field and every op name (against
// ONNX's schema registry, or the profile's own domain-qualified ops) with file/line/pointer errors.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/decide/json_file.h"

namespace porttool::decide {

class AnalyzedModel;

// A machine-checkable constraint: `kind` picks the check, `params` holds its arguments.
// Kinds: attr_in, attr_range, attrs_unset, axis_in, input_rank, max_rank, batch, input_absent,
// input_constant, inputs_constant, resize_scale, static_shapes (see docs/facts.md "Targets").
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
