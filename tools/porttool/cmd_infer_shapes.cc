// `porttool infer-shapes MODEL -o OUT [--input-shape NAME:DIMS ...] [--json]`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>

#include "lib/ir/graph_view.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/shape_completion.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct InferShapesOptions {
  std::string model;
  std::vector<std::string> input_shapes, input_values;
  int max_iterations = 8;
  ModelOutputOptions output;
  bool json = false;
  std::vector<std::string> custom_ops;
  bool allow_partial = false;
};

nlohmann::json ReportJson(const runtime::ShapeCompletion& c,
                          const std::vector<std::string>& files) {
  const shape::InferReport& r = c.inference;
  nlohmann::json unresolved = nlohmann::json::array();
  for (const auto& u : r.unresolved) {
    unresolved.push_back({{"tensor", u.tensor},
                          {"node", u.node},
                          {"op_type", u.op_type},
                          {"reason", u.reason},
                          {"root", u.root}});
  }
  return {{"iterations", r.iterations},
          {"tensors", r.tensors_total},
          {"static", r.tensors_static},
          {"symbolic", r.tensors_symbolic},
          {"by_execution", c.by_execution.size()},
          {"unresolved", unresolved},
          {"notes", r.notes},
          {"written", files}};
}

// One line per root blocker with the count of tensors it leaves unknown: a single Reshape can
// block a hundred tensors downstream, and the user needs to look at that one node. The full list
// is for -v.
constexpr size_t kTextBlockers = 20;

void PrintBlockers(const shape::InferReport& r) {
  std::vector<std::string> order;
  std::map<std::string, const shape::UnresolvedTensor*> first;
  std::map<std::string, int> blocked;
  for (const auto& u : r.unresolved) {
    if (blocked[u.node]++ == 0) order.push_back(u.node);
    if (!first.count(u.node) || (u.root && !first[u.node]->root)) first[u.node] = &u;
  }
  PrintBounded(order, kTextBlockers, "  ", "root blockers", "--json lists every unknown tensor",
               [&](const std::string& node) {
                 const auto* u = first[node];
                 std::string reason =
                     u->reason.substr(0, u->reason.find(" (reached through the inputs"));
                 std::cout << fmt::format(
                     "  root blocker {}: {}; {} tensor(s) unknown because of it\n",
                     ir::QuotedNodeLabel(u->node, u->op_type), reason, blocked[u->node]);
               });
  if (!spdlog::should_log(spdlog::level::debug)) return;
  for (const auto& u : r.unresolved) {
    std::cout << fmt::format("  unknown {}: blocked at {}: {}\n", u.tensor,
                             ir::QuotedNodeLabel(u.node, u.op_type), u.reason);
  }
}

void PrintText(const runtime::ShapeCompletion& c, const std::vector<std::string>& files) {
  const shape::InferReport& r = c.inference;
  std::cout << fmt::format("{} tensors: {} static, {} symbolic, {} unknown ({} iteration{}{})\n",
                           r.tensors_total, r.tensors_static, r.tensors_symbolic,
                           r.unresolved.size(), r.iterations, r.iterations == 1 ? "" : "s",
                           c.by_execution.empty() ? ""
                                                  : fmt::format("; {} measured by one executor run",
                                                                c.by_execution.size()));
  PrintBlockers(r);
  for (const auto& f : files) std::cout << "wrote " << f << "\n";
}

// Shapes are completed as split, emit-header, decide and port complete them: static inference to
// a fixed point, then one executor run for what it cannot follow (Shape -> Gather -> Concat in
// PyTorch 1.x exports, Pad amounts from a Concat of a Split in tf2onnx ones).
int RunInferShapes(const InferShapesOptions& o) {
  shape::InferOptions options;
  options.input_shapes = ParseShapeFlags(o.input_shapes);  // usage errors before loading
  options.input_values = ParseInputValueFlags(o.input_values);
  options.max_iterations = o.max_iterations;
  io::Model model = LoadModel(o.model);
  ir::RequireDefinedNames(model.proto.graph());
  RefuseOverwritingInput(model, o.output);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/false);
  runtime::ShapeCompletion c;
  {
    StageTimer timer("infer shapes");
    c = runtime::CompleteShapes(model, options.input_shapes, options.input_values,
                                options.max_iterations);
  }
  for (const auto& note : c.inference.notes) spdlog::warn("{}", note);
  bool partial = !c.unresolved.empty();
  std::vector<std::string> files;
  if (!partial || o.allow_partial) files = SaveModel(model, o.output);
  if (o.json) {
    PrintJson(ReportJson(c, files));
  } else {
    PrintText(c, files);
  }
  if (!partial) return kExitOk;
  const auto& first = c.unresolved.front();
  std::string why = c.Summary();
  if (!c.dynamic_inputs.empty()) {
    why += fmt::format("; pin the input shape (e.g. {})", shape::ExampleInputShapes(model));
  }
  std::string what =
      fmt::format("tensor '{}' has no known shape (blocked at node {}): {}", first.tensor,
                  ir::QuotedNodeLabel(first.node, first.op_type), WithFlagHint(why));
  if (o.allow_partial) {  // asked for: the partial graph is the result, and says so
    spdlog::warn("{}; the partial graph was written (--allow-partial)", what);
    return kExitOk;
  }
  spdlog::error(
      "{}; nothing written (fix the root blocker above, or pass --allow-partial to write the "
      "partial graph)",
      what);
  return kExitCheckFailed;
}

}  // namespace

void RegisterInferShapes(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<InferShapesOptions>();
  auto* cmd = app.add_subcommand(
      "infer-shapes", "Infer every tensor's shape (data propagation, fixed point) and save it");
  cmd->footer(
      "Several inputs: repeat --input-shape, or --input-shape \"x:1x3x64x64,mask:1x64\".\n"
      "Example:\n  porttool infer-shapes testdata/demo_detector.onnx -o /tmp/static.onnx "
      "--input-shape images:1x3x320x320");
  AddModelArg(*cmd, opts->model);
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddInputValueOption(*cmd, opts->input_values);
  cmd->add_option("--max-iterations", opts->max_iterations,
                  "Cap on inference passes while shapes keep changing")
      ->check(InRange(1, 1000))
      ->capture_default_str();
  AddCustomOpOption(*cmd, opts->custom_ops);
  cmd->add_flag("--allow-partial", opts->allow_partial,
                "Write the model even when some tensors stay unknown (default: exit 1 and write "
                "nothing)");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunInferShapes(*opts); }; });
}

}  // namespace porttool::cli
