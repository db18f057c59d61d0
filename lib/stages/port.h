// PortStage: `porttool port MODEL --target NAME`, one call from a PC model to a verified,
// target-ready bundle. It is a sequence of the other stages, its result verified once against the
// original (port_verify.cc):
//   1 check     CheckStage; then pin the inputs (given pins, else the target's default shape)
//   2 simplify  SimplifyStage; the result passes the ONNX checker
//   3 rewrite   RewriteStage with the target profile's `rewrites`; checked the same way
//   4 equalize  with calibration data and equalization asked for: the conv pairs rescaled
//               (quant::EqualizeForRequest) before the split, so every segment carries them
//   5 split     the compatibility scan and PlanSplit/WriteSplit on the target; every segment
//               passes the ONNX checker, and the chained segments reproduce the original model
//               (within tolerance, bit for bit when no step changed it): one end-to-end check,
//               and only when it misses each step on its own, to name the one that broke it
//   6 quantize  with calibration data: QuantizeStage once on the whole model, the same table (and
//               bias correction's conv input means) on every accelerator segment, accuracy end
//               to end through the chained segments
//   7 emit      EmitHeaderStage per segment, EmitRunnerStage (reference, and the target's own
//               backend where there is one), ScaffoldStage for every op the target cannot run
//   8 report    DecideStage on the ported model, extended with what port did and what is left
// The bundle is built in a staging directory beside its destination and renamed into place
// only when every step passed; its files (port.log aside) are byte-identical for the same inputs,
// whatever the thread count or the output directory's name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/report.h"
#include "lib/quant/quantize_calibrate.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"
#include "lib/util/error.h"

namespace porttool::stages {

struct PortOptions {
  std::filesystem::path model;
  std::filesystem::path rules_dir;
  std::string target;               // a profile name or a profile file
  shape::InputShapes input_shapes;  // empty: the target's default_input_shape
  shape::InputValues input_values;  // inputs made constants (and the profile's input_values)
  shape::InputRanges input_ranges;  // what the verifications' random inputs draw from
  // With calibration data (request.data_dir): quantize. The request's table, thresholds and
  // progress are port's own business; the rest (method, QDQ options, target) is the user's.
  std::optional<quant::QuantizeCalibrateRequest> quantize;
  // Without calibration data, on a target that computes float in float16: the evaluation samples
  // (the request's eval_dir, preprocessing, tasks and labels) on which the float16 segments are
  // judged against the float model, task figures included.
  std::optional<quant::QuantizeCalibrateRequest> float16_eval;
  std::filesystem::path facts_file;  // the decision report's project facts
  std::vector<decide::FlagFact> flag_facts;
  std::filesystem::path output_dir;  // empty: DefaultPortDir(model)
  bool dry_run = false;              // plan only: run the steps to split in memory, write nothing
  bool force = false;                // replace an existing output directory
  bool keep_failed = false;          // keep the staging directory when a step fails
  int threads = 1;                   // samples calibrated and evaluated at once
  uint64_t seed = 0;                 // random inputs of the verifications
  double rtol = 1e-4, atol = 1e-5;   // the end-to-end check's tolerance (steps 2, 3 inexact)
};

struct PortStep {
  std::string id;  // check, simplify, rewrite, equalize, split, quantize, emit, report
  std::string title;
  std::string outcome;               // ok | skipped | failed | planned (dry run)
  std::vector<std::string> details;  // what it did, deterministic (no timings, no paths)
  double ms = 0;                     // wall time (stdout, --json and port.log only)
  double verify_ms = 0;              // the part of ms spent verifying (likewise)
  // Model-against-model comparisons the step ran (executor runs compared): a port whose steps
  // are all equivalent rewrites runs one, at split; more only to find the step that broke it.
  int equivalence_checks = 0;
};

struct PortFailure {
  std::string step;
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  std::string node, tensor;
  std::filesystem::path kept;  // the partial bundle, with keep_failed
};

// One line of the verdict: a question about the bundle that port answers with a measured figure
// against the figure it needs. A gate not evaluated is a value of its own, never a pass.
enum class GateStatus { kPass, kFail, kNotEvaluated };
std::string GateStatusName(GateStatus status);  // "pass", "fail", "not evaluated"

struct GateRow {  // a segment's figures, or the total's
  std::string what;
  std::string measured, needed;
  GateStatus status = GateStatus::kNotEvaluated;
};

struct Gate {
  std::string id;     // fit | accuracy | arithmetic | completeness
  std::string title;  // the question, e.g. "does it fit the target's memory?"
  GateStatus status = GateStatus::kNotEvaluated;
  // A gate not evaluated for a reason the user cannot act on (fp16 emulation that does not exist
  // yet) does not hold the verdict back; one the user can act on (no evaluation samples) does.
  bool blocking = true;
  std::string measured, needed;  // the summary figures
  std::string finding;           // why it fails or was not evaluated, and what to do
  std::vector<GateRow> rows;
  std::vector<std::string> notes;  // how it was judged; findings that do not decide it
  nlohmann::json figures;          // the numbers behind it, for report.json
};

struct PortResult {
  std::filesystem::path bundle;  // written (or, dry run / failed, where it would be)
  std::vector<PortStep> steps;
  std::optional<PortFailure> failure;
  std::string status;                     // ready | not-ready | failed
  std::vector<Gate> gates;                // empty on a failed run
  std::string verdict;                    // one line; empty on a failed run
  std::vector<std::string> left;          // what is left to a person
  std::vector<std::string> bundle_files;  // relative to the bundle, sorted
  nlohmann::json report;                  // what report.json holds
  bool ok() const { return !failure; }
};

// "<model stem>.port" in the current directory.
std::filesystem::path DefaultPortDir(const std::filesystem::path& model);

// Called when a step starts and when it ends (outcome set), for progress logs.
using PortObserver = std::function<void(const PortStep& step, bool finished)>;

// Errors before the first step (an unknown target, a malformed profile, an existing output
// directory without `force`) are thrown; a failing step is reported in `failure` with the error's
// kind, and nothing is left on disk unless keep_failed.
PortResult PortStage(const PortOptions& options, const PortObserver& observer = nullptr);

// The --json document of a run: status, steps with timings, gates and verdict (or, on a failed
// run, the error and no verdict), bundle files, report.
nlohmann::json PortJson(const PortResult& result);

}  // namespace porttool::stages
