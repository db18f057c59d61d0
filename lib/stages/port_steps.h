// The steps of `port` (lib/stages/port.h), each a function of the run's state, and what they hand
// each other. Internal to lib/stages: port.cc sequences them, port_report.cc renders the report
// from the state they leave.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/report.h"
#include "lib/decide/scan.h"
#include "lib/decide/target.h"
#include "lib/emit/split_writer.h"
#include "lib/emit/vendor_steps.h"
#include "lib/io/model.h"
#include "lib/quant/quantize_calibrate.h"
#include "lib/runtime/session.h"
#include "lib/stages/port.h"
#include "lib/stages/split.h"

namespace porttool::stages {

// Adds the time until it goes out of scope (an exception included) to the step's verify_ms:
// verification is reported apart from the work, as it can cost more than the work.
class VerifyClock {
 public:
  explicit VerifyClock(PortStep& step) : step_(step) {}
  VerifyClock(const VerifyClock&) = delete;
  VerifyClock& operator=(const VerifyClock&) = delete;
  ~VerifyClock() {
    step_.verify_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
            .count();
  }

 private:
  PortStep& step_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Something port could not do itself, for a person: a custom operator to write (with its
// scaffolded package), or ops that run on the host CPU (with their estimated cost).
struct LeftItem {
  std::string kind;  // custom-op | host
  std::string op;    // OpKey
  std::vector<std::string> nodes;
  std::string text;          // one sentence
  std::string package;       // custom-ops/<dir>, relative to the bundle
  nlohmann::json signature;  // custom-op: what to implement
};

// Float vs the pipeline's quantized chain, end to end.
struct PortQuantization {
  quant::CalibrationTable table;
  quant::QuantizeCalibrateResult whole;  // the whole model: calibration, search, its own accuracy
  std::vector<std::pair<int, std::string>> qdq_files;  // accelerator segment -> qdq file
  std::optional<quant::AccuracyReport> chain_accuracy;
  std::vector<std::string> kept_float;       // by hand and by the search
  std::map<int, uint64_t> qdq_weight_bytes;  // accelerator segment -> its QDQ model's weights
};

// The unquantized accelerator segments computed as the device computes them (the profile's
// float_arithmetic fp16): the chain with those segments in float16 against the float model.
struct Float16Check {
  struct Output {
    std::string name;
    double sqnr_db = 0, cosine = 1, max_abs = 0, float_min = 0, float_max = 0;
    bool finite = true;
  };
  size_t samples = 0;
  std::vector<Output> outputs;
  std::vector<runtime::Float16Overflow> overflows;
  // On the evaluation samples (PortOptions::float16_eval): the chain in float16 against the
  // float model, task figures included.
  std::optional<quant::AccuracyReport> evaluation;
};

// The verdict: the gates and what they add up to.
struct PortVerdict {
  std::string status;  // ready | not-ready (empty before the split)
  std::string text;    // one line
  std::string kind;    // ok | warn | fail: the report's colour
  std::vector<Gate> gates;
};

// A step that changed the model (simplify, the target's rewrites), with the model before it: the
// one end-to-end check after the split compares the result with the first of these, and verifies
// each on its own only when that check misses (port_verify.cc).
struct ChangedStep {
  std::string id;    // simplify | rewrite
  std::string what;  // how messages name it: "simplify", "the target's rewrites"
  io::Model before;
};

// The end-to-end check's random inputs and the original model's outputs on them: the float16
// check compares the device's arithmetic with the same run.
struct OriginalRun {
  runtime::TensorMap inputs;
  std::vector<runtime::NamedTensor> outputs;
};

struct PortState {
  explicit PortState(const PortOptions& o) : options(o) {}
  const PortOptions& options;
  decide::TargetProfile target;
  std::string model_file;  // the source's file name, as the bundle records it
  std::string source_sha256;
  io::Model model;  // as it goes through the steps (the source file is never written)
  // options.quantize with its node references ("#N") as names of the source's nodes (WithNodeNames)
  std::optional<quant::QuantizeCalibrateRequest> quantize;
  shape::InputShapes pins;
  std::string pins_origin;                      // "given" | "the target profile's default"
  shape::InputValues values;                    // inputs made constants: given, and the profile's
  std::map<std::string, std::string> kept_ifs;  // If left by simplify -> inline-if's reason
  std::vector<ChangedStep> changed;             // in step order; empty: the model is as pinned
  std::optional<OriginalRun> original_run;      // from the first change, or the split
  // The step the per-step walk found broke the outputs, when the end-to-end check missed: the
  // failure is reported as that step's, as verifying after each step would have.
  std::string culprit_step;
  std::optional<SplitPlan> plan;
  std::optional<decide::TargetCheck> scan;  // of the model the segments were cut from
  // What the fit gate reads, as emit measured it: each segment's float32 arena (its header's
  // plan) and the runner's bridge arena.
  std::vector<uint64_t> segment_arena;
  std::optional<uint64_t> bridge_arena;
  emit::WriteSplitResult written;
  std::vector<io::Model> segments;  // as written
  std::optional<PortQuantization> quant;
  std::vector<std::string> equalized;  // conv outputs the equalize step rescaled
  std::optional<Float16Check> fp16;
  std::vector<LeftItem> left;
  std::optional<decide::DecisionReport> decision;
  PortVerdict verdict;                        // computed once the steps are done
  nlohmann::json report_json;                 // what report.json holds
  std::vector<std::string> headers, runners;  // bundle-relative
  emit::VendorStepResult vendor;              // the step to the device: files and what is missing
  std::filesystem::path dir;                  // where files go (the staging directory)
};

void CheckAndPinStep(PortState& s, PortStep& step);
void SimplifyStep(PortState& s, PortStep& step);
void RewriteStep(PortState& s, PortStep& step);
void EqualizeStep(PortState& s, PortStep& step);
void SplitStep(PortState& s, PortStep& step);
void QuantizeStep(PortState& s, PortStep& step);
void EmitStep(PortState& s, PortStep& step);
void ReportStep(PortState& s, PortStep& step, const std::vector<PortStep>& steps);

// After simplify or the rewrites (port_verify.cc), for a step that changed the model: the ONNX
// checker now (cheap, and it names the step); its outputs go to the end-to-end check, with the
// model before it kept for a miss. The first such step also runs the original on the
// verification inputs (s.original_run), the reference half of that check.
void NoteChangedStep(PortState& s, PortStep& step, ChangedStep change);
// The one end-to-end check, at the split: the chained `segments` (as written; none in a dry run,
// which compares the model the split was planned on) against the original model on seeded random
// inputs, bit for bit when no step changed the model, else within the run's tolerance. On a miss
// each step is verified against the model before it, and the error names the first that misses
// (s.culprit_step). Time goes to step.verify_ms, the runs it compared to step.equivalence_checks.
void VerifyEndToEnd(PortState& s, PortStep& step, const std::vector<const io::Model*>& segments);

// What the later steps would do, for a dry run.
std::vector<std::string> PlannedDetails(const PortState& s, const std::string& step);

// report.json / report.md / report.html from the finished state (no timings, no paths).
nlohmann::json PortReportJson(const PortState& s, const std::vector<PortStep>& steps);
std::string PortReportMarkdown(const PortState& s, const std::vector<PortStep>& steps);
std::string PortReportHtml(const PortState& s, const std::vector<PortStep>& steps);
// The bytes of a model's weights (initializers and Constant values), float32 ones scaled by
// `float_scale` (0.5 for a device that keeps them as float16).
uint64_t WeightBytes(const io::Model& model, double float_scale);

// The gates from what the steps left in the state, and the verdict they add up to (port_gates.cc).
PortVerdict ComputeVerdict(const PortState& s);

}  // namespace porttool::stages
