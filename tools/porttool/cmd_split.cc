// `porttool split`: cut a model at named nodes into accelerator/host segments chained by bridge
// tensors, written with pipeline.json (lib/ir/split.h does the work).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/analysis/check.h"
#include "lib/analysis/cut_advice.h"
#include "lib/decide/partition.h"
#include "lib/decide/scan.h"
#include "lib/emit/split_writer.h"
#include "lib/ir/dtype.h"
#include "lib/ir/split.h"
#include "lib/runtime/shape_completion.h"
#include "lib/runtime/verify.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct SplitOptions {
  std::string model;
  std::vector<std::string> at;
  std::string output;
  bool copy_weights = false;
  uint64_t bridge_warn_bytes = uint64_t{1} << 20;
  std::vector<std::string> input_shapes;
  bool json = false;
  std::vector<std::string> custom_ops;
  bool auto_cut = false;
  std::string target;
  std::string rules_dir;
  bool verify = false;
  uint64_t seed = kDefaultSeed;
  int min_segment_nodes = 1;
  int max_segments = 0;
};

std::string TensorListText(const std::vector<ir::BoundaryTensor>& tensors) {
  std::vector<std::string> parts;
  for (const auto& t : tensors) {
    parts.push_back(fmt::format("{}[{}]", t.name, ir::ShapeToString(t.type)));
  }
  return util::Join(parts, ", ");
}

// The split as a table: segments, then bridges.
std::string FormatSplitTable(const ir::SplitResult& result) {
  std::string out = fmt::format("{:>3}  {:<22} {:<12} {:>6}  {}\n", "#", "file", "role", "nodes",
                                "inputs -> outputs");
  for (size_t s = 0; s < result.segments.size(); ++s) {
    const ir::Segment& seg = result.segments[s];
    out += fmt::format("{:>3}  {:<22} {:<12} {:>6}  {} -> {}\n", s, seg.file,
                       ir::RoleName(seg.role), seg.model.proto.graph().node_size(),
                       TensorListText(seg.inputs), TensorListText(seg.outputs));
  }
  if (result.bridges.empty()) return out + "no bridges\n";
  out += fmt::format("\n{:<32} {:>12}  {:>4}  {}\n", "bridge", "bytes", "from", "to");
  for (const auto& b : result.bridges) {
    std::vector<std::string> to;
    for (int c : b.consumers) to.push_back(std::to_string(c));
    out +=
        fmt::format("{:<32} {:>12}  {:>4}  {}\n", b.tensor,
                    b.bytes ? util::FormatBytes(*b.bytes) : "?", b.producer, util::Join(to, ","));
  }
  return out;
}

// Which nodes go to the host: the --at nodes, or with --auto every node the target's accelerator
// cannot run (decision engine's compatibility scan). `model` has its shapes completed already.
ir::SplitResult PlanSplit(const io::Model& model, const SplitOptions& o,
                          std::optional<decide::Partition>& partition) {
  ir::SplitOptions options;
  options.infer_types = shape::TypeInference();
  ir::SplitResult result;
  if (!o.auto_cut) {
    result = ir::SplitAtNodes(model, o.at, options);
  } else {
    partition = decide::PlanAutoSplit(model, LoadTargetFlag(o.rules_dir, o.target),
                                      {o.min_segment_nodes, o.max_segments});
    result = ir::SplitModel(model, partition->chosen.host, options);
  }
  result.advice = analysis::AdviseCuts(model, result, {.bridge_warn_bytes = o.bridge_warn_bytes});
  return result;
}

// Segments need complete types (the ONNX checker rejects a bridge without a shape): the same
// shape completion as emit-header and decide, on a copy; the input file is never changed.
io::Model CompletedModel(const io::Model& model, const SplitOptions& o) {
  io::Model completed = model;
  runtime::ShapeCompletion c = runtime::CompleteShapes(completed, ParseShapeFlags(o.input_shapes));
  for (const auto& note : c.inference.notes) spdlog::warn("{}", note);
  if (!c.by_execution.empty()) {
    spdlog::info(
        "{} tensor shape(s) static inference left unknown were taken from one executor run",
        c.by_execution.size());
  }
  if (!c.unresolved.empty() && c.dynamic_inputs.empty()) spdlog::warn("{}", c.Summary());
  return completed;
}

// The ONNX checker on every written segment: a segment a converter would reject is not a
// verified split, whatever the outputs say.
bool CheckSegments(const ir::SplitResult& result, const emit::WriteSplitResult& written) {
  bool ok = true;
  for (const auto& segment : result.segments) {
    analysis::CheckReport report;
    analysis::RunOnnxChecker(io::Load(written.dir / segment.file), report);
    for (const auto& f : report.findings) {
      spdlog::error("verify: {} fails the ONNX checker: {}", segment.file, f.message);
      ok = false;
    }
  }
  return ok;
}

// Runs the original and the chained segments on the same random inputs; outputs must be
// bit-identical (the executor is deterministic).
// The segments are re-read from disk, so what is verified is what was written.
bool VerifySegments(const io::Model& model, const ir::SplitResult& result,
                    const emit::WriteSplitResult& written, const SplitOptions& o) {
  io::Model pinned = model;
  shape::ApplyInputShapes(pinned, ParseShapeFlags(o.input_shapes));
  std::vector<io::Model> segments;
  for (const auto& segment : result.segments)
    segments.push_back(io::Load(written.dir / segment.file));
  std::vector<const io::Model*> chain;
  for (const auto& segment : segments) chain.push_back(&segment);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/true);
  runtime::SessionOptions session;
  session.registry = custom->Kernels();
  runtime::VerifyResult verify = runtime::VerifyChainRandom(pinned, chain, o.seed, session);
  for (const auto& problem : verify.problems) spdlog::error("verify: {}", problem);
  if (verify.identical) {
    spdlog::info("verify: {} output(s) identical between the model and its {} chained segments",
                 verify.outputs.size(), chain.size());
  }
  bool checked = CheckSegments(result, written);
  return verify.identical && checked;
}

// A verification that could not run (an op without a kernel) must not hide that the split itself
// was written: say so, and keep the error's own exit code (1 means "ran and differed").
std::optional<bool> TryVerify(const io::Model& model, const ir::SplitResult& result,
                              const emit::WriteSplitResult& written, const SplitOptions& o,
                              int& exit_code) {
  try {
    return VerifySegments(model, result, written, o);
  } catch (const Error& e) {
    spdlog::error("verify could not run: {}", e.what());
    spdlog::error("the split itself was written to {}/; only the verification could not run",
                  written.dir.string());
    exit_code = ExitCodeFor(e.kind());
    return std::nullopt;
  }
}

int RunSplit(const SplitOptions& o) {
  if (o.auto_cut != !o.target.empty()) ThrowUsage("--auto and --target go together");
  if (!o.auto_cut && (o.min_segment_nodes != 1 || o.max_segments != 0)) {
    ThrowUsage("--min-segment-nodes and --max-segments shape --auto partitions only");
  }
  if (o.auto_cut == !o.at.empty()) ThrowUsage("give either --at NODE or --auto --target NAME");
  io::Model source = LoadModel(o.model);
  auto schemas = LoadCustomOps(o.custom_ops, &source, /*with_kernels=*/false);
  io::Model model = CompletedModel(source, o);
  std::optional<decide::Partition> partition;
  ir::SplitResult result = PlanSplit(model, o, partition);
  std::filesystem::path dir =
      o.output.empty() ? emit::DefaultSplitDir(o.model) : std::filesystem::path(o.output);
  emit::WriteSplitOptions write_options;
  write_options.copy_weights = o.copy_weights;
  if (partition) write_options.annotations["estimate"] = decide::PartitionToJson(*partition);
  emit::WriteSplitResult written = emit::WriteSplit(result, model, dir, write_options);
  int exit_code = kExitOk;
  std::optional<bool> verify_ran =
      o.verify ? TryVerify(model, result, written, o, exit_code) : std::optional<bool>(true);
  bool verified = verify_ran.value_or(false);
  if (verify_ran && !verified) exit_code = kExitCheckFailed;
  for (const auto& note : result.notes) spdlog::warn("{}", WithFlagHint(note));
  for (const auto& note : written.notes) spdlog::warn("{}", note);
  for (const auto& advice : result.advice) spdlog::warn("{}", advice.message);
  if (o.json) {
    nlohmann::json doc = written.manifest;
    doc["dir"] = written.dir.string();
    if (o.verify) doc["verified"] = verify_ran ? nlohmann::json(verified) : nlohmann::json(nullptr);
    PrintJson(doc);
    return exit_code;
  }
  std::cout << fmt::format("{} -> {}/ ({} segments, {} bridges, weights {})\n", o.model,
                           written.dir.string(), result.segments.size(), result.bridges.size(),
                           o.copy_weights ? "copied" : "zero-copy");
  std::cout << FormatSplitTable(result);
  if (partition) std::cout << decide::PartitionToText(*partition);
  if (o.verify && verify_ran) {
    std::cout << (verified ? "verify: outputs identical, every segment passes the ONNX checker\n"
                           : "verify: FAILED (see the errors above)\n");
  } else if (o.verify) {
    std::cout << "verify: could not run (the split was written)\n";
  }
  return exit_code;
}

}  // namespace

void RegisterSplit(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<SplitOptions>();
  auto* cmd = app.add_subcommand(
      "split", "Cut a model at nodes into accelerator/host segments with a pipeline.json");
  cmd->footer(
      "Each --at node runs on the host (CPU); the graph between cuts becomes accelerator\n"
      "segments. Tensors crossing a cut (skip connections included) become bridges.\n"
      "Examples:\n  porttool split model.onnx --at Custom_GELU_0 -o model.split\n"
      "  porttool split model.onnx --auto --target rknn-rk3588 --input-shape x:1x3x640x640 "
      "--verify");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--at", opts->at,
                  "Node to run on the host (repeat for several cuts; adjacent cut nodes share "
                  "one host segment)");
  cmd->add_flag("--auto", opts->auto_cut,
                "Cut at every maximal run of nodes the --target's accelerator cannot run");
  AddTargetOption(*cmd, opts->target, "Target for --auto");
  AddRulesDirOption(*cmd, opts->rules_dir);
  cmd->add_option("--min-segment-nodes", opts->min_segment_nodes,
                  "With --auto: an accelerator segment with fewer nodes runs on the host")
      ->check(InRange(1, 1e9))
      ->capture_default_str();
  cmd->add_option("--max-segments", opts->max_segments,
                  "With --auto: at most this many segments (0: no limit); the accelerator "
                  "islands that cost least to move go to the host first")
      ->check(InRange(0, 1e9))
      ->capture_default_str();
  cmd->add_flag("--verify", opts->verify,
                "Run the model and the chained segments on the same random inputs (needs static "
                "input dims: use --input-shape) and require identical outputs; exit 1 otherwise");
  AddSeedOption(*cmd, opts->seed, "--verify's random inputs");
  cmd->add_option("-o,--output", opts->output,
                  "Output directory (default: <model stem>.split in the current directory); "
                  "replaced only if it holds a previous split");
  cmd->add_flag("--copy-weights", opts->copy_weights,
                "Write self-contained segments holding only their own weights (default: "
                "zero-copy, segments refer to the hard-linked original data file)");
  cmd->add_option("--bridge-warn-bytes", opts->bridge_warn_bytes,
                  "Warn, with smaller cut candidates nearby, when a bridge exceeds this size")
      ->capture_default_str();
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunSplit(*opts); }; });
}

}  // namespace porttool::cli
