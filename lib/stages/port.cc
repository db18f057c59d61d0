#include "lib/stages/port.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/io/atomic_file.h"
#include "lib/io/staging_dir.h"
#include "lib/runtime/execution.h"
#include "lib/stages/port_inputs.h"
#include "lib/stages/port_steps.h"
#include "lib/stages/target.h"
#include "lib/util/json_text.h"

namespace porttool::stages {
namespace fs = std::filesystem;
namespace {

using StepFn = void (*)(PortState&, PortStep&);

struct StepDef {
  const char* id;
  const char* title;
  StepFn run;
  bool in_dry_run;  // runs in memory in a dry run; the others are only described
};

constexpr StepDef kSteps[] = {
    {"check", "check the model and pin its inputs", CheckAndPinStep, true},
    {"simplify", "fold, fuse and clean up; ONNX checker", SimplifyStep, true},
    {"rewrite", "the target's exact rewrites; ONNX checker", RewriteStep, true},
    {"equalize", "rescale conv pairs for per-channel int8 (exact); verified at the split",
     EqualizeStep, false},
    {"split", "scan the target, cut what it cannot run; verify end to end", SplitStep, true},
    {"quantize", "calibrate once, quantize every accelerator segment", QuantizeStep, false},
    {"emit", "headers, runners, custom-operator packages", EmitStep, false},
};

// An existing output directory is the user's: replaced only when asked to, only when porttool
// wrote it, never when it holds an input (lib/io/output_dir.h).
void CheckOutputDir(const fs::path& dir, const PortOptions& options) {
  if (!options.dry_run) io::CheckOutputDir(PortOutputDirRequest(dir, options));
}

std::string LogText(const PortResult& r) {
  std::string out;
  for (const auto& s : r.steps) {
    out += fmt::format("[{}] {} ({:.1f} ms{}{}): {}\n", s.id, s.outcome, s.ms,
                       s.verify_ms > 0 ? fmt::format(", verifying {:.1f} ms", s.verify_ms) : "",
                       s.equivalence_checks > 0
                           ? fmt::format(", {} equivalence check(s)", s.equivalence_checks)
                           : "",
                       s.title);
    for (const auto& d : s.details) out += "    " + d + "\n";
  }
  if (r.failure) {
    out += fmt::format("failed at step '{}': {}\n", r.failure->step, r.failure->message);
    return out;
  }
  for (const auto& g : r.gates) {
    out += fmt::format("gate {}: {}: {} (needs {}){}\n", g.id, GateStatusName(g.status), g.measured,
                       g.needed, g.finding.empty() ? "" : "; " + g.finding);
  }
  out += fmt::format("verdict: {} ({})\n", r.verdict, r.status);
  return out;
}

std::vector<std::string> BundleFiles(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), dir).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A failure the end-to-end check traced to an earlier step is that step's, as verifying after
// every step would have reported it: its line says failed too.
std::string FailedStep(const PortState& s, PortResult& r, const char* id) {
  if (s.culprit_step.empty() || s.culprit_step == id) return id;
  for (auto& step : r.steps) {
    if (step.id == s.culprit_step) step.outcome = "failed";
  }
  return s.culprit_step;
}

// Runs one step: times it, reports it to the observer, and turns an error into the failure.
bool RunStep(PortState& s, PortResult& r, const char* id, const char* title,
             const std::function<void(PortStep&)>& body, const PortObserver& observer) {
  PortStep step{id, title, "ok", {}, 0};
  if (observer) observer(step, false);
  auto start = std::chrono::steady_clock::now();
  try {
    body(step);
  } catch (const Error& e) {
    step.outcome = "failed";
    r.failure = PortFailure{FailedStep(s, r, id), e.kind(), e.what(), e.node(), e.tensor(), {}};
  } catch (const std::bad_alloc&) {
    step.outcome = "failed";
    r.failure = PortFailure{id, ErrorKind::kBadInput, "out of memory", "", "", {}};
  }
  step.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.steps.push_back(step);
  if (observer) observer(r.steps.back(), true);
  return !r.failure;
}

}  // namespace

fs::path DefaultPortDir(const fs::path& model) { return fs::path(model.stem().string() + ".port"); }

PortResult PortStage(const PortOptions& options, const PortObserver& observer) {
  // Every kernel on one thread, samples in parallel (options.threads): the bundle is then the
  // same for any thread count, every number in it coming from the same single-threaded kernels.
  runtime::ScopedExecution single_threaded({.threads = 1});
  PortState s(options);
  s.target = LoadTargetProfile(options.rules_dir, options.target);
  if (options.float16_eval && (options.quantize || s.target.float_arithmetic != "fp16")) {
    ThrowUsage(
        "evaluation samples without calibration data judge a float port in float16, and target "
        "{} computes {}{}: give calibration samples to judge a quantized port",
        s.target.name, s.target.float_arithmetic.empty() ? "no float" : s.target.float_arithmetic,
        options.quantize ? " (and this port is quantized)" : "");
  }
  PortResult r;
  r.bundle = options.output_dir.empty() ? DefaultPortDir(options.model) : options.output_dir;
  CheckOutputDir(r.bundle, options);
  std::optional<io::StagingDir> staging;
  if (!options.dry_run) {
    staging.emplace(r.bundle, "port-bundle");
    s.dir = staging->path();
  }
  bool ok = true;
  for (const auto& def : kSteps) {
    if (!ok) break;
    if (options.dry_run && !def.in_dry_run) {
      r.steps.push_back({def.id, def.title, "planned", PlannedDetails(s, def.id), 0});
      if (observer) observer(r.steps.back(), true);
      continue;
    }
    ok = RunStep(
        s, r, def.id, def.title, [&](PortStep& step) { def.run(s, step); }, observer);
  }
  // A failed step is the whole outcome: no gates, no verdict, nothing that names files the run
  // did not write.
  auto failed = [&]() -> PortResult {
    r.status = "failed";
    if (options.dry_run) return r;
    io::WriteFileAtomic(s.dir / "port.log", LogText(r));
    if (options.keep_failed) r.failure->kept = staging->Keep();
    return r;
  };
  if (!ok) return failed();
  s.verdict = ComputeVerdict(s);
  if (!options.dry_run) {
    std::vector<PortStep> done = r.steps;
    ok = RunStep(
        s, r, "report", "the decision report, extended with what port did and what is left",
        [&](PortStep& step) { ReportStep(s, step, done); }, observer);
  }
  if (!ok) return failed();
  r.status = s.verdict.status;
  r.gates = s.verdict.gates;
  r.verdict = s.verdict.text;
  for (const auto& item : s.left) r.left.push_back(item.text);
  if (options.dry_run) return r;
  io::WriteFileAtomic(s.dir / "port.log", LogText(r));
  r.report = s.report_json;
  r.bundle_files = BundleFiles(s.dir);
  staging->Commit();
  return r;
}

nlohmann::json PortJson(const PortResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"id", s.id},
                     {"title", s.title},
                     {"outcome", s.outcome},
                     {"details", s.details},
                     {"ms", s.ms},
                     {"verify_ms", s.verify_ms},
                     {"equivalence_checks", s.equivalence_checks}});
  }
  nlohmann::json doc = {{"status", r.status},
                        {"bundle", r.bundle.string()},
                        {"steps", steps},
                        {"ok", r.status == "ready"}};
  if (r.failure) {
    const PortFailure& f = *r.failure;
    nlohmann::json error = {{"step", f.step}, {"message", f.message}};
    if (!f.node.empty()) error["node"] = f.node;
    if (!f.tensor.empty()) error["tensor"] = f.tensor;
    error["kept"] = f.kept.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.kept.string());
    doc["error"] = error;
    return doc;
  }
  nlohmann::json gates = nlohmann::json::array();
  for (const auto& g : r.gates) {
    gates.push_back({{"id", g.id},
                     {"status", GateStatusName(g.status)},
                     {"blocking", g.blocking},
                     {"measured", g.measured},
                     {"needed", g.needed},
                     {"finding", g.finding}});
  }
  doc["gates"] = gates;
  doc["verdict"] = r.verdict;
  doc["left"] = r.left;
  doc["files"] = r.bundle_files;
  if (!r.report.is_null()) doc["report"] = r.report;
  return doc;
}

}  // namespace porttool::stages
