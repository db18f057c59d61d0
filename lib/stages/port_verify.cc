// When port verifies, against what, and how a miss finds its step. Simplify and the target's
// rewrites are meant to keep the outputs (within tolerance) and the split to keep them bit for
// bit, so checking each step against the one before costs two executor runs a step for what one
// comparison at the end says: the port's result against the original. A step that changed
// nothing is not verified at all; one that changed something gets the ONNX checker at once
// (cheap, and it names the step) and its outputs in that one end-to-end comparison. Only when it
// misses are the steps verified one by one, to name the one that broke the outputs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "lib/analysis/check.h"
#include "lib/runtime/chain.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/session.h"
#include "lib/stages/port_steps.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

using Outputs = std::vector<runtime::NamedTensor>;

// A tolerance, or none: bit for bit (the split's own promise, and the whole port's when no step
// changed the model).
struct Tolerance {
  double rtol = 0, atol = 0;
};
using Within = std::optional<Tolerance>;

std::string ToleranceText(const Within& t) {
  return t ? fmt::format("within rtol {:g} atol {:g}", t->rtol, t->atol) : "bit for bit";
}

// The worst output of a comparison that passed: what the result line reports.
struct Worst {
  std::string output;
  double max_abs = 0;
};

// `got` against `want` by output name: the worst difference, or Error(kCheckFailed) in the words
// the per-step verification always used ("simplify changed output 'y' beyond rtol ...").
Worst CompareOutputs(const Outputs& want, const Outputs& got, const std::string& what,
                     const Within& t, uint64_t seed) {
  Worst worst;
  for (const auto& w : want) {
    auto g = std::find_if(got.begin(), got.end(), [&](const auto& o) { return o.name == w.name; });
    if (g == got.end()) ThrowCheckFailed("{}: output '{}' is gone", what, w.name);
    runtime::TensorStats st =
        runtime::CompareTensors(w.value, g->value, t ? t->rtol : 0, t ? t->atol : 0);
    if (!st.comparable) ThrowCheckFailed("{}: output '{}': {}", what, w.name, st.note);
    // Bit for bit as the split's own verification always judged it (runtime/verify.h).
    const bool missed =
        t ? !st.within_tolerance : st.max_abs != 0 || w.value.dtype() != g->value.dtype();
    if (missed) {
      ThrowCheckFailed(
          "{} changed output '{}' {}(max abs {:.3g}) on random inputs (seed {})", what, w.name,
          t ? fmt::format("beyond rtol {:g} atol {:g} ", t->rtol, t->atol) : "", st.max_abs, seed);
    }
    if (worst.output.empty() || st.max_abs > worst.max_abs) worst = {w.name, st.max_abs};
  }
  return worst;
}

const io::Model& Original(const PortState& s) {
  return s.changed.empty() ? s.model : s.changed.front().before;
}

// The model after changed step `i`: the one the next changed step started from, or the model
// the split was planned on.
const io::Model& After(const PortState& s, size_t i) {
  return i + 1 < s.changed.size() ? s.changed[i + 1].before : s.model;
}

Outputs RunModel(const io::Model& model, const runtime::TensorMap& inputs) {
  return runtime::Session(model).Run(inputs);
}

// The original's outputs on the seeded random inputs (drawn from the run's ranges).
OriginalRun RunOriginal(const io::Model& original, const PortOptions& o) {
  OriginalRun run;
  run.inputs = runtime::RandomInputs(runtime::InputSpecsOf(original), o.seed, o.input_ranges);
  run.outputs = RunModel(original, run.inputs);
  return run;
}

std::string ChangedStepsText(const PortState& s) {
  std::vector<std::string> what;
  for (const auto& c : s.changed) what.push_back(c.what);
  return util::Join(what, " and ");
}

// The failure is the culprit's, as verifying after each step would have reported it.
[[noreturn]] void ThrowAsCulprit(PortState& s, PortStep& step, const std::string& id,
                                 const Error& e) {
  step.details.push_back(fmt::format("verify: step '{}' broke the outputs: {}", id, e.what()));
  s.culprit_step = id;
  throw e;
}

// After the end-to-end check missed: each changed step against the model before it, then the
// chain against the model it was cut from, each model run once. The first that misses is the
// culprit. A miss none of them shows alone is their differences adding up: each step then passed
// the verification it always had, and the port goes on, saying so.
void WalkToCulprit(PortState& s, PortStep& step, const Outputs& chain_outputs,
                   const std::string& miss) {
  step.details.push_back("verify: end to end: " + miss +
                         "; verifying each step against the model before it");
  const Within tolerance = Tolerance{s.options.rtol, s.options.atol};
  const runtime::TensorMap& inputs = s.original_run->inputs;
  Outputs before = s.original_run->outputs;
  for (size_t i = 0; i < s.changed.size(); ++i) {
    const ChangedStep& change = s.changed[i];
    Outputs after = RunModel(After(s, i), inputs);
    ++step.equivalence_checks;
    try {
      Worst w = CompareOutputs(before, after, change.what, tolerance, s.options.seed);
      step.details.push_back(
          fmt::format("verify: {} alone: {} of the model before it (max abs {:.2g})", change.what,
                      ToleranceText(tolerance), w.max_abs));
    } catch (const Error& e) {
      ThrowAsCulprit(s, step, change.id, e);
    }
    before = std::move(after);
  }
  if (!chain_outputs.empty()) {
    ++step.equivalence_checks;
    try {
      CompareOutputs(before, chain_outputs, "the chained segments", std::nullopt, s.options.seed);
    } catch (const Error& e) {
      ThrowAsCulprit(s, step, "split", e);
    }
    step.details.push_back(
        "verify: the chained segments alone: bit for bit the model they were cut from");
  }
  step.details.push_back(
      "verified step by step: each step stays within tolerance of the model before it (the "
      "verification each step has on its own), though their differences add up beyond it");
}

std::string PassedText(const PortState& s, size_t segments, size_t outputs, const Within& t,
                       const Worst& worst) {
  const bool dry_run = s.options.dry_run;
  if (s.changed.empty()) {
    return fmt::format(
        "verified: the {} chained segment(s) reproduce the model's {} output(s) bit for bit on "
        "random inputs (seed {}), and every segment passes the ONNX checker",
        segments, outputs, s.options.seed);
  }
  return fmt::format(
      "verified end to end: {} reproduce{} the {} output(s) of the original model (as check "
      "pinned it, before {}) {} (worst: output '{}', max abs {:.2g}) on random inputs (seed {}); "
      "{}",
      dry_run ? "the model the split was planned on"
              : fmt::format("the {} chained segment(s)", segments),
      dry_run ? "s" : "", outputs, ChangedStepsText(s), ToleranceText(t), worst.output,
      worst.max_abs, s.options.seed,
      dry_run ? "a dry run writes no segment to compare" : "every segment passes the ONNX checker");
}

}  // namespace

void NoteChangedStep(PortState& s, PortStep& step, ChangedStep change) {
  {
    VerifyClock timer(step);
    analysis::CheckReport checker;
    analysis::RunOnnxChecker(s.model, checker);
    if (!checker.findings.empty()) {
      ThrowCheckFailed("{}: the result fails the ONNX checker: {}", change.what,
                       checker.findings.front().message);
    }
    // The reference half of the end-to-end check, taken before the model the first change
    // started from is needed no more: an original that cannot run on the verification inputs
    // (an If taking a branch the model is never meant to run) stops the port here, at the step
    // whose verification needs it, as it did when each step verified itself.
    if (!s.original_run) s.original_run = RunOriginal(change.before, s.options);
  }
  // Worded so that nothing claims a comparison that has not run yet.
  step.details.push_back(
      "the result passes the ONNX checker; its outputs are left to the one end-to-end "
      "comparison after the split (the port's result against the original model)");
  s.changed.push_back(std::move(change));
}

void VerifyEndToEnd(PortState& s, PortStep& step, const std::vector<const io::Model*>& segments) {
  VerifyClock timer(step);
  const bool dry_run = segments.empty();
  if (dry_run && s.changed.empty()) {
    step.details.push_back(
        "not verified: no step changed the model and a dry run writes no segment to compare");
    return;
  }
  // The split keeps every bit, so with no other change the result must match exactly.
  const Within tolerance =
      s.changed.empty() ? Within() : Within(Tolerance{s.options.rtol, s.options.atol});
  const io::Model& original = Original(s);
  if (!s.original_run) s.original_run = RunOriginal(original, s.options);
  const runtime::TensorMap& inputs = s.original_run->inputs;
  Outputs result =
      dry_run ? RunModel(s.model, inputs) : runtime::ChainSession(original, segments).Run(inputs);
  ++step.equivalence_checks;
  const std::string what =
      dry_run ? "the model after " + ChangedStepsText(s) : "the chained segments";
  try {
    Worst worst = CompareOutputs(s.original_run->outputs, result, what, tolerance, s.options.seed);
    step.details.push_back(
        PassedText(s, segments.size(), s.original_run->outputs.size(), tolerance, worst));
  } catch (const Error& e) {
    if (s.changed.empty()) {
      step.details.push_back(std::string("verify: ") + e.what());
      throw;
    }
    WalkToCulprit(s, step, dry_run ? Outputs{} : result, e.what());
  }
}

}  // namespace porttool::stages
