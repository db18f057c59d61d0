// `porttool split`: cut a model at named nodes into accelerator/host segments chained by bridge
// tensors, written with pipeline.json (lib/ir/split.h does the work).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/ir/dtype.h"
#include "lib/stages/split.h"
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
  std::vector<std::string> input_shapes, input_values, input_ranges;
  bool json = false;
  std::vector<std::string> custom_ops;
  bool auto_cut = false;
  std::string target;
  std::string rules_dir;
  bool verify = false;
  uint64_t seed = kDefaultSeed;
  int min_segment_nodes = 1;
  int max_segments = 0;
  bool force = false;
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

void LogVerification(const stages::SplitVerification& v, size_t segments,
                     const std::filesystem::path& dir) {
  for (const auto& problem : v.problems) spdlog::error("verify: {}", problem);
  if (!v.ran) {
    spdlog::error("verify could not run: {}", v.error);
    spdlog::error("the split itself was written to {}/; only the verification could not run",
                  dir.string());
  } else if (v.identical) {
    spdlog::info("verify: {} output(s) identical between the model and its {} chained segments",
                 v.outputs, segments);
  }
}

std::string VerifyLine(const stages::SplitVerification& v) {
  if (!v.ran) return "verify: could not run (the split was written)\n";
  return v.ok() ? "verify: outputs identical, every segment passes the ONNX checker\n"
                : "verify: FAILED (see the errors above)\n";
}

int RunSplit(const SplitOptions& o) {
  if (o.auto_cut != !o.target.empty()) ThrowUsage("--auto and --target go together");
  if (!o.auto_cut && (o.min_segment_nodes != 1 || o.max_segments != 0)) {
    ThrowUsage("--min-segment-nodes and --max-segments shape --auto partitions only");
  }
  if (o.auto_cut == !o.at.empty()) ThrowUsage("give either --at NODE or --auto --target NAME");
  stages::SplitStageOptions options;
  options.at = o.at;
  if (o.auto_cut) options.target = LoadTargetFlag(o.rules_dir, o.target);
  options.partition = {o.min_segment_nodes, o.max_segments};
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  options.bridge_warn_bytes = o.bridge_warn_bytes;
  shape::InputValues values = ParseInputValueFlags(o.input_values);
  shape::InputRanges ranges = ParseInputRangeFlags(o.input_ranges);
  io::Model source = LoadModel(o.model);
  if (!values.empty()) {
    // The split is of the model with those inputs constant, and verified as such.
    shape::PinAndSetInputs(source, options.input_shapes, values);
    options.input_shapes.clear();
  }
  shape::CheckInputRanges(source, ranges);
  auto schemas = LoadCustomOps(o.custom_ops, &source, /*with_kernels=*/false);
  stages::SplitPlan plan = stages::PlanSplit(source, options);
  std::filesystem::path dir =
      o.output.empty() ? emit::DefaultSplitDir(o.model) : std::filesystem::path(o.output);
  stages::SplitWriteOptions write;
  write.copy_weights = o.copy_weights;
  write.replace = o.force;
  write.inputs = InputPaths(o.custom_ops);
  for (const auto& p : InputPaths({o.rules_dir, TargetFile(o.target)})) write.inputs.push_back(p);
  emit::WriteSplitResult written = stages::WriteSplit(plan, dir, write);
  std::optional<stages::SplitVerification> verify;
  if (o.verify) {
    auto custom = LoadCustomOps(o.custom_ops, &source, /*with_kernels=*/true);
    verify = stages::VerifySplit(source, options.input_shapes, plan, written.dir, o.seed,
                                 custom->Kernels(), ranges);
  }
  for (const auto& note : plan.notes) spdlog::warn("{}", WithFlagHint(note));
  for (const auto& note : written.notes) spdlog::warn("{}", note);
  const ir::SplitResult& result = plan.split;
  if (verify) LogVerification(*verify, result.segments.size(), written.dir);
  if (o.json) {
    nlohmann::json doc = written.manifest;
    doc["dir"] = written.dir.string();
    if (verify) doc["verified"] = verify->ran ? nlohmann::json(verify->ok()) : nullptr;
    PrintJson(doc);
  } else {
    std::cout << fmt::format("{} -> {}/ ({} segments, {} bridges, weights {})\n", o.model,
                             written.dir.string(), result.segments.size(), result.bridges.size(),
                             o.copy_weights ? "copied" : "zero-copy");
    std::cout << FormatSplitTable(result);
    if (plan.partition) std::cout << decide::PartitionToText(*plan.partition);
    if (verify) std::cout << VerifyLine(*verify);
  }
  // A split whose boundary sizes are unknown is no finished split: the runner cannot size its
  // buffers, so exit 1 rather than an exit 0 beside "bytes": null.
  if (!plan.unsized.empty()) {
    spdlog::error(
        "'{}'{} has no static size (pipeline.json records \"bytes\": null): {}; the split was "
        "written to {}/",
        plan.unsized.front(),
        plan.unsized.size() > 1 ? fmt::format(" (and {} more)", plan.unsized.size() - 1) : "",
        plan.unsized_why.empty() ? "its type has no fixed size" : WithFlagHint(plan.unsized_why),
        written.dir.string());
  }
  // A verification that could not run keeps its error's exit code (1 means "ran and differed").
  if (verify && !verify->ran) return ExitCodeFor(verify->error_kind);
  if (!plan.unsized.empty()) return kExitCheckFailed;
  if (!verify) return kExitOk;
  return verify->ok() ? kExitOk : kExitCheckFailed;
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
                  "Output directory (default: <model stem>.split in the current directory)")
      ->type_name(kOutputDirType);
  AddForceFlag(*cmd, opts->force);
  cmd->add_flag("--copy-weights", opts->copy_weights,
                "Write self-contained segments holding only their own weights (default: "
                "zero-copy, segments refer to the hard-linked original data file)");
  cmd->add_option("--bridge-warn-bytes", opts->bridge_warn_bytes,
                  "Warn, with smaller cut candidates nearby, when a bridge exceeds this size")
      ->capture_default_str();
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddInputValueOption(*cmd, opts->input_values);
  AddInputRangeOption(*cmd, opts->input_ranges);
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunSplit(*opts); }; });
}

}  // namespace porttool::cli
