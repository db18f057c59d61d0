// `porttool reduce`: shrink a model on which a check fails (a converter that aborts, a runtime
// that disagrees) to the few nodes that make it fail (lib/stages/reduce.h). The check is a shell
// command with {model} in it, or, with --numeric, porttool's own comparison of the model with a
// second one or with itself in float16.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "lib/io/atomic_file.h"
#include "lib/io/output_dir.h"
#include "lib/io/run_inputs.h"
#include "lib/quant/samples.h"
#include "lib/shape/infer.h"
#include "lib/shape/input_shapes.h"
#include "lib/stages/quantize.h"
#include "lib/stages/reduce_checks.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kExitInterrupted = 130;  // the shell's code for a command stopped by SIGINT

struct ReduceOptions {
  std::string model;
  std::string check;
  std::vector<std::string> fail_on;
  std::string fail_on_output;
  std::string known_good;
  bool numeric = false;
  std::string against;
  std::string table;
  bool per_channel = false;
  double rtol = 1e-3, atol = 1e-4;
  std::string output;
  std::string work_dir;
  bool force = false;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double timeout = 0;
  std::string on_timeout = "fail";
  std::vector<std::string> shape_specs;
  std::string data;
  bool random_inputs = false;
  uint64_t seed = kDefaultSeed;
  bool no_bisect = false;
  bool json = false;
};

std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted.store(true); }

// --fail-on rc=3 / rc=3,4 / rc=134: the exit statuses that mean failing.
std::set<int> ParseFailOn(const std::vector<std::string>& specs) {
  std::set<int> codes;
  for (const auto& spec : specs) {
    if (!util::StartsWith(spec, "rc=")) {
      ThrowUsage("--fail-on '{}': expected rc=N (an exit status that means failing)", spec);
    }
    for (const auto& part : util::Split(spec.substr(3), ',')) {
      try {
        size_t used = 0;
        int code = std::stoi(part, &used);
        if (used != part.size() || code < 0 || code > 255) throw std::invalid_argument(part);
        codes.insert(code);
      } catch (const std::exception&) {
        ThrowUsage("--fail-on '{}': '{}' is not an exit status (0-255)", spec, part);
      }
    }
  }
  return codes;
}

void CheckModeFlags(const ReduceOptions& o) {
  if (o.numeric == !o.check.empty()) {
    ThrowUsage("give either --check 'CMD {{model}}' or --numeric (one way to tell failing)");
  }
  if (o.numeric && (!o.fail_on.empty() || !o.fail_on_output.empty() || !o.known_good.empty())) {
    ThrowUsage("--fail-on, --fail-on-output and --check-pass-on belong to --check, not --numeric");
  }
  if (!o.numeric && !o.against.empty()) ThrowUsage("--against belongs to --numeric");
  if (o.numeric && o.against.empty()) {
    ThrowUsage("--numeric needs --against fp16, qdq or MODEL (what the model is compared with)");
  }
  if ((o.against == "qdq") != !o.table.empty()) {
    ThrowUsage(
        "--against qdq and --table TABLE.json go together (the table quantize-calibrate "
        "wrote)");
  }
  if (!o.data.empty() && o.random_inputs) ThrowUsage("give --data or --random-inputs, not both");
}

fs::path OutputPath(const ReduceOptions& o) {
  if (!o.output.empty()) return o.output;
  fs::path model(o.model);
  return model.parent_path() / (model.stem().string() + ".reduced.onnx");
}

// The work directory is reduce's own (its marker) or new: its cache is reused across runs with
// the same check; a directory porttool did not write is never written into.
fs::path PrepareWorkDir(const ReduceOptions& o, const fs::path& output) {
  fs::path dir = o.work_dir.empty() ? fs::path(output.string() + ".reduce") : fs::path(o.work_dir);
  io::GuardOutput(dir);
  std::error_code ec;
  bool empty = !fs::exists(dir, ec) || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec));
  if (!empty && !io::HasOutputMarker(dir)) {
    ThrowUsage(
        "work directory {} exists and porttool did not write it; choose another with "
        "--work-dir or remove it",
        dir.string());
  }
  io::CreateOutputDir(dir);
  io::WriteOutputMarker(dir, "reduce-work");
  return dir;
}

// The samples boundary values are computed from: --data, --random-inputs, or (numeric) random.
std::unique_ptr<stages::BoundaryValues> MakeValues(const ReduceOptions& o,
                                                   const io::Model& reference) {
  if (o.data.empty() && !o.random_inputs && !o.numeric) return nullptr;
  auto specs = runtime::InputSpecsOf(reference);
  std::vector<std::string> ids;
  std::vector<runtime::TensorMap> samples;
  if (!o.data.empty()) {
    auto set = quant::ListSamples(o.data, specs, std::nullopt);
    for (size_t i = 0; i < set.size(); ++i) {
      ids.push_back(set.ids[i]);
      samples.push_back(quant::LoadSample(set, i, specs));
    }
  } else {
    ids.push_back("random");
    samples.push_back(runtime::RandomInputs(specs, o.seed));
  }
  return std::make_unique<stages::BoundaryValues>(reference, std::move(ids), std::move(samples));
}

// The model with the table's QuantizeLinear/DequantizeLinear pairs, built without the conv
// fusions quantize-calibrate prepares with, so that every tensor keeps its name and each
// candidate has its quantized twin.
io::Model QdqReference(const io::Model& model, const ReduceOptions& o) {
  stages::QuantizeStageOptions q;
  q.table_in = o.table;
  q.prepare = false;
  q.request.evaluate = false;
  q.request.qdq.per_channel = o.per_channel;
  return stages::QuantizeStage(model, q).qdq_model;
}

// Candidates cut inside a model with dynamic inputs get inputs whose shape nothing can tell, and
// the ONNX checker rejects a graph input without one: say so before the first check.
void WarnAboutDynamicInputs(const io::Model& model) {
  for (const auto& spec : runtime::InputSpecsOf(model)) {
    bool dynamic = !spec.has_shape ||
                   std::any_of(spec.dims.begin(), spec.dims.end(), [](int64_t d) { return d < 0; });
    if (!dynamic) continue;
    spdlog::warn(
        "input '{}' has dynamic dims: tensors cut inside the model may become candidate inputs "
        "without a shape, which the ONNX checker rejects; pin it with --input-shape (e.g. {})",
        spec.name, shape::ExampleInputShapes(model));
    return;
  }
}

void PrintStep(const stages::ReduceStep& s) {
  std::cout << fmt::format("[{:>4}] {:<10} {:>5} nodes  {:<7}  {:>6.2f} s{}  {}\n", s.candidate,
                           s.phase, s.nodes, s.failing ? "FAILING" : "passing", s.seconds,
                           s.cached ? " (cached)" : "", s.detail)
            << std::flush;
}

int RunReduce(const ReduceOptions& o) {
  CheckModeFlags(o);
  io::Model model = LoadModel(o.model);
  shape::ApplyInputShapes(model, ParseShapeFlags(o.shape_specs));
  WarnAboutDynamicInputs(model);
  fs::path output = OutputPath(o);
  io::CheckOutputFilePath(output);
  RefuseOverwritingInput(model, output);
  if (fs::exists(output) && !o.force) {
    ThrowUsage("{} exists; choose another -o or pass --force to replace it", output.string());
  }
  std::optional<io::Model> against;
  if (o.against == "qdq") {
    against = QdqReference(model, o);
  } else if (o.numeric && o.against != "fp16") {
    against = LoadModel(o.against);
    shape::ApplyInputShapes(*against, ParseShapeFlags(o.shape_specs));
  }
  if (!o.known_good.empty()) io::NoteInput(o.known_good);
  fs::path work = PrepareWorkDir(o, output);

  // The reference's values at the cut: a second model's when it is the reference, the float
  // model's own against fp16 or its QDQ twin.
  bool model_is_reference = o.against == "fp16" || o.against == "qdq";
  auto values = MakeValues(o, against && !model_is_reference ? *against : model);
  std::unique_ptr<stages::CandidateCheck> check;
  if (o.numeric) {
    stages::NumericCheckOptions n;
    n.rtol = o.rtol;
    n.atol = o.atol;
    n.against = against ? &*against : nullptr;
    n.float16 = !against;
    n.spill_dir = work;
    check = std::make_unique<stages::NumericCheck>(n, *values);
  } else {
    stages::CommandCheckOptions c;
    c.command = o.check;
    c.fail_codes = ParseFailOn(o.fail_on);
    c.fail_output_regex = o.fail_on_output;
    c.timeout_seconds = o.timeout;
    c.timeout_fails = o.on_timeout == "fail";
    c.values = values.get();
    c.cancel = &g_interrupted;
    check = std::make_unique<stages::CommandCheck>(c);
  }

  stages::ReduceOptions r;
  r.jobs = std::max(1, o.jobs);
  r.work_dir = work;
  r.cancel = &g_interrupted;
  r.bisect = !o.no_bisect;
  if (!o.known_good.empty()) r.known_good = fs::path(o.known_good);
  if (!o.json) r.on_step = PrintStep;
  r.report_extra = {{"model", o.model},
                    {"check", o.numeric ? "numeric against " + o.against : o.check},
                    {"output", output.string()},
                    {"jobs", r.jobs}};
  g_interrupted.store(false);
  auto previous = signal(SIGINT, OnInterrupt);
  stages::ReduceResult result;
  try {
    result = stages::Reduce(model, *check, r);
  } catch (...) {
    signal(SIGINT, previous);
    throw;
  }
  signal(SIGINT, previous);
  if (result.nodes.empty()) {
    spdlog::error("interrupted before the original model was checked; nothing written");
    return kExitInterrupted;
  }
  io::Save(result.model, output);

  auto doc = stages::ReduceJson(result);
  doc.update(r.report_extra);
  doc["work_dir"] = work.string();
  if (o.json) {
    doc.erase("steps");
    PrintJson(doc);
  } else {
    std::cout << fmt::format(
        "{} {} of {} nodes ({}) after {} checks ({} in bisection, {} cached) in {:.1f} s\n",
        result.interrupted ? "interrupted: best so far keeps" : "reduced to", result.nodes.size(),
        result.units, util::JoinFirst(result.node_names, 8), result.invocations,
        result.bisect_invocations, result.cache_hits, result.seconds);
    std::cout << (result.minimal
                      ? "1-minimal: removing any one of these nodes makes the check pass\n"
                      : "not proven 1-minimal (the search was stopped)\n");
    if (result.constant_nodes_kept) {
      std::cout << "Constant nodes kept as nodes: the failure needs them (the model with them as "
                   "initializers passes)\n";
    } else if (result.units < static_cast<size_t>(model.proto.graph().node_size())) {
      std::cout << "Constant nodes are not counted: the ones these nodes read are initializers "
                   "of the result\n";
    }
    if (result.subgraph_nodes > 0) {
      std::cout << result.subgraph_nodes
                << " node(s) hold subgraphs (If/Loop/Scan): kept or removed whole, their bodies "
                   "were not reduced\n";
    }
    std::cout << "wrote " << output.string() << "\nsteps in " << (work / "reduce.json").string()
              << "\n";
  }
  return result.interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace

void RegisterReduce(CLI::App& app, RunFn& run) {
  auto o = std::make_shared<ReduceOptions>();
  auto* cmd = app.add_subcommand(
      "reduce", "Shrink a model on which a check fails to the few nodes that make it fail");
  cmd->footer(
      "Examples:\n"
      "  porttool reduce det.onnx --check 'my-converter {model}' -o small.onnx\n"
      "  porttool reduce det.onnx --check 'python3 convert.py {model}' --fail-on rc=3\n"
      "  porttool reduce bad.onnx --numeric --against good.onnx --data samples/\n"
      "See docs/cli/reduce.md.");
  AddModelArg(*cmd, o->model);
  cmd->add_option("--check", o->check,
                  "Shell command run on each candidate, {model} replaced by its path ({data} by "
                  "a directory of its inputs as <id>.<input>.npy with --data/--random-inputs); a "
                  "non-zero exit status means failing unless --fail-on/--fail-on-output say "
                  "otherwise");
  cmd->add_option("--fail-on", o->fail_on,
                  "rc=N[,M...]: only these exit statuses mean failing (e.g. rc=3 for one error, "
                  "rc=139 for a segfault through a shell)");
  cmd->add_option("--fail-on-output", o->fail_on_output,
                  "Failing only when the command's output (stdout and stderr) matches this "
                  "regular expression (with --fail-on: both must hold; alone: any exit status)");
  cmd->add_option("--check-pass-on", o->known_good,
                  "A known-good model that must pass the check before reducing")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--numeric", o->numeric,
                "Built-in check: a candidate fails when its outputs diverge from --against's "
                "beyond --rtol/--atol, both fed the reference's values at its inputs");
  cmd->add_option("--against", o->against,
                  "With --numeric: fp16 (the model itself computed in float16), qdq (its QDQ model "
                  "from --table) or MODEL (a second model sharing tensor names, the reference)");
  cmd->add_option("--table", o->table,
                  "With --against qdq: the calibration table (quantize-calibrate --table) whose "
                  "QDQ model is the reference")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--per-channel", o->per_channel,
                "With --against qdq: per-channel weight scales, as the table was meant for");
  cmd->add_option("--rtol", o->rtol, "With --numeric: relative tolerance")->capture_default_str();
  cmd->add_option("--atol", o->atol, "With --numeric: absolute tolerance")->capture_default_str();
  cmd->add_option("-o,--output", o->output,
                  "The reduced model (default: <model>.reduced.onnx beside the model)")
      ->type_name(kOutputFileType);
  cmd->add_option("--work-dir", o->work_dir,
                  "Candidates, best.onnx, cache.json and reduce.json (default: <output>.reduce/); "
                  "reusing it reuses the cached verdicts of the same check")
      ->type_name(kOutputDirType);
  cmd->add_flag("--force", o->force, "Replace -o when it exists");
  cmd->add_option("--jobs", o->jobs, "Candidates checked at once (default: the number of cores)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--timeout", o->timeout,
                  "Seconds a check may run; a check still running then is killed (0: no limit)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--on-timeout", o->on_timeout,
                  "What a killed check means: fail (a hang is the failure being reduced) or pass")
      ->check(CLI::IsMember({"fail", "pass"}))
      ->capture_default_str();
  AddInputShapeOption(*cmd, o->shape_specs);
  cmd->add_option("--data", o->data,
                  "Real samples (<id>.<input>.npy, as port takes them): candidates' inputs get the "
                  "values the model computes there, from every sample")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--random-inputs", o->random_inputs,
                "Boundary values from one seeded random sample (the default for --numeric)");
  AddSeedOption(*cmd, o->seed, "the random inputs");
  cmd->add_flag("--no-bisect", o->no_bisect,
                "Skip the bisection over the topological order: plain ddmin from all nodes");
  AddJsonFlag(*cmd, o->json);
  cmd->callback([o, &run] { run = [o] { return RunReduce(*o); }; });
}

}  // namespace porttool::cli
