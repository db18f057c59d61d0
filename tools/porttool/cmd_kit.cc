// `porttool kit`: per-operator test kits (ONNX backend layout + kit.json + C header) for one
// node, every node of an op type, or every distinct op of a model; `kit --check` judges a board's
// outputs against them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "lib/stages/scaffold.h"
#include "lib/util/error.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct KitCliOptions {
  std::vector<std::string> positional;  // MODEL, or with --check: KIT_DIR OUTPUTS_DIR
  std::string node, op;
  bool all = false;
  bool check = false;
  std::vector<std::string> input_shapes;
  std::string data;
  std::string output;
  uint64_t seed = kDefaultSeed;
  uint64_t header_max_bytes = 4u << 20;
  std::vector<std::string> custom_ops;
  bool json = false;
  bool force = false;
};

int RunCheck(const KitCliOptions& o) {
  if (o.positional.size() != 2) ThrowUsage("kit --check takes KIT_DIR OUTPUTS_DIR");
  emit::KitCheckResult result = emit::CheckKits(o.positional[0], o.positional[1]);
  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : result.rows) {
      rows.push_back({{"kit", r.kit},
                      {"set", r.set},
                      {"output", r.output},
                      {"passed", r.passed},
                      {"detail", r.detail}});
    }
    PrintJson({{"passed", result.passed}, {"failed", result.failed}, {"outputs", rows}});
  } else {
    for (const auto& r : result.rows) {
      fmt::print("{} {} {} {}: {}\n", r.passed ? "ok  " : "FAIL", r.kit, r.set, r.output, r.detail);
    }
    fmt::print("{} passed, {} failed\n", result.passed, result.failed);
  }
  return result.failed == 0 ? kExitOk : kExitCheckFailed;
}

int RunKit(const KitCliOptions& o) {
  if (o.check) return RunCheck(o);
  if (o.positional.size() != 1) ThrowUsage("kit takes one MODEL (or --check KIT_DIR OUTPUTS_DIR)");
  if (o.output.empty()) ThrowUsage("kit needs -o DIR");
  int selectors = !o.node.empty() + !o.op.empty() + o.all;
  if (selectors != 1) ThrowUsage("give exactly one of --node NAME, --op TYPE, --all");
  stages::KitStageOptions options;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  io::Model model = io::Load(o.positional[0]);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/true);
  options.kit.select = o.all            ? emit::KitOptions::Select::kAll
                       : o.node.empty() ? emit::KitOptions::Select::kOp
                                        : emit::KitOptions::Select::kNode;
  options.kit.name = o.node.empty() ? o.op : o.node;
  options.kit.seed = o.seed;
  options.kit.header_max_bytes = o.header_max_bytes;
  options.kit.kernels = custom->Kernels();
  options.samples_dir = o.data;
  options.out_dir = o.output;
  options.replace = o.force;
  options.other_inputs = InputPaths(o.custom_ops);
  auto kits = stages::KitStage(model, options);
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& k : kits) {
      list.push_back({{"dir", k.dir}, {"op", k.op}, {"node", k.node}, {"notes", k.notes}});
    }
    PrintJson({{"output", o.output}, {"kits", list}});
    return kExitOk;
  }
  for (const auto& k : kits) {
    fmt::print("{}/{}  {} (node {})\n", o.output, k.dir, k.op, k.node);
    for (const auto& n : k.notes) fmt::print("    note: {}\n", n);
  }
  fmt::print("{} kit(s) written\n", kits.size());
  return kExitOk;
}

}  // namespace

void RegisterKit(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<KitCliOptions>();
  auto* cmd = app.add_subcommand("kit", "Per-operator test kits for on-board testing");
  cmd->footer(
      "Examples:\n"
      "  porttool kit det.onnx --all --input-shape x:1x3x640x640 -o kits/\n"
      "  porttool kit model.onnx --node Custom_GELU_0 --data samples/ -o kits/\n"
      "  porttool kit --check kits/Gelu_Custom_GELU_0 board_outputs/   (exit 1 on a failure)");
  cmd->add_option("args", opts->positional, "MODEL, or with --check: KIT_DIR OUTPUTS_DIR")
      ->required();
  cmd->add_option("--node", opts->node, "One kit for this node");
  cmd->add_option("--op", opts->op, "One kit per distinct (attributes, shapes) of this op type");
  cmd->add_flag("--all", opts->all, "One kit per distinct (op, attributes, shapes) in the model");
  cmd->add_flag("--check", opts->check,
                "Judge outputs in OUTPUTS_DIR against KIT_DIR (a kit or a folder of kits)");
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("--data", opts->data,
                  "Capture the node's real inputs from running the model on these samples");
  cmd->add_option("-o,--output", opts->output, "Directory for the kits")->type_name(kOutputDirType);
  AddForceFlag(*cmd, opts->force);
  AddSeedOption(*cmd, opts->seed, "random model inputs");
  cmd->add_option("--header-max-bytes", opts->header_max_bytes,
                  "Skip the C header of kits whose tensors exceed this size")
      ->capture_default_str();
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunKit(*opts); }; });
}

}  // namespace porttool::cli
