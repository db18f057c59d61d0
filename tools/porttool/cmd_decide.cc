// `porttool decide`: the go-ONNX-or-custom-operator decision report (lib/decide/report.h).
#include <iostream>

#include "lib/io/atomic_file.h"
#include "lib/stages/decide.h"
#include "lib/util/json_text.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct DecideCliOptions {
  std::string model;
  std::string target;
  std::string facts;
  std::string format = "md";
  bool json = false;
  std::string output;
  std::string rules_dir;
  std::vector<std::string> input_shapes;
  // Common facts as flags; unset flags leave the fact to --facts, the target or "unknown".
  std::map<std::string, std::string> text_facts;  // fact -> value
  std::map<std::string, double> number_facts;
  std::map<std::string, bool> bool_facts;
};

// A flag that sets fact `fact`, stored by name so the flag list is data, not code.
struct FactFlag {
  const char* flag;
  const char* fact;
  const char* help;
  char kind;  // 's' string, 'n' number, 'b' boolean
};

constexpr FactFlag kFactFlags[] = {
    {"--hardware-class", "hardware.class",
     "server-x86|server-arm64|jetson|soc-npu|"
     "soc-npu-vendor-only|cortex-a|cortex-m|riscv-mcu|fpga",
     's'},
    {"--ram-bytes", "hardware.ram_bytes", "RAM available to the model (bytes)", 'n'},
    {"--flash-bytes", "hardware.flash_bytes", "Flash/storage for weights (bytes)", 'n'},
    {"--fps", "performance.fps", "Required frames per second", 'n'},
    {"--resolution", "performance.resolution", "720p, 1080p, 4k or WxH", 's'},
    {"--latency-ms", "performance.latency_ms", "Required end-to-end latency (ms; 0 = none)", 'n'},
    {"--power-w", "performance.power_w", "Power budget (W; 0 = no hard limit)", 'n'},
    {"--int8-loss", "precision.int8_loss_pct", "INT8 accuracy loss (%)", 'n'},
    {"--fp16", "precision.requires_fp16", "FP16 (or better) is required (true/false)", 'b'},
    {"--mixed-precision", "precision.mixed", "Mixed precision is needed (true/false)", 'b'},
    {"--dev-days", "schedule.dev_days", "Person-days available incl. bring-up", 'n'},
    {"--model-update", "maintenance.model_update", "reexport|op-rewrite|versioned", 's'},
    {"--day-rate", "cost.day_rate", "Cost of one person-day", 'n'},
    {"--benefit", "cost.benefit", "What meeting the SLA is worth", 'n'},
};

int RunDecide(const DecideCliOptions& o) {
  decide::DecideOptions options;
  options.rules_dir = ResolveRulesDir(o.rules_dir);
  options.target = o.target;
  options.facts_file = o.facts;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  for (const auto& flag : kFactFlags) {
    if (auto it = o.text_facts.find(flag.fact); it != o.text_facts.end()) {
      options.flag_facts.push_back({flag.fact, it->second, flag.flag});
    } else if (auto n = o.number_facts.find(flag.fact); n != o.number_facts.end()) {
      options.flag_facts.push_back({flag.fact, n->second, flag.flag});
    } else if (auto b = o.bool_facts.find(flag.fact); b != o.bool_facts.end()) {
      options.flag_facts.push_back({flag.fact, b->second, flag.flag});
    }
  }
  io::Model model = LoadModel(o.model);
  RefuseOverwritingInput(model, o.output);
  decide::DecisionReport report = stages::DecideStage(model, options);
  bool json = o.json || o.format == "json";
  std::string text = json ? util::DumpJson(report.ToJson(), 2) + "\n" : report.ToMarkdown();
  if (o.output.empty()) {
    std::cout << text;
  } else {
    io::WriteFileAtomic(o.output, text);
  }
  return kExitOk;
}

}  // namespace

void RegisterDecide(CLI::App& app, RunFn& run) {
  auto o = std::make_shared<DecideCliOptions>();
  auto* cmd = app.add_subcommand(
      "decide", "Decision report: go through ONNX, or write custom operators (and which ones)");
  cmd->footer(
      "Example:\n  porttool decide model.onnx --target rknn-rk3588 --input-shape x:1x3x640x640 "
      "--fps 15 --resolution 640x640 --latency-ms 0 --power-w 0 --int8-loss 1 --dev-days 5\n"
      "Facts are documented in docs/facts.md; rules and targets are read from --rules-dir, "
      "$PORTTOOL_RULES_DIR or the source tree's rules/.");
  AddModelArg(*cmd, o->model);
  AddTargetOption(*cmd, o->target, "The target");
  cmd->add_option("--facts", o->facts, "Project facts as JSON (see docs/facts.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", o->format, "Report format (--json is short for --format json)")
      ->check(CLI::IsMember({"md", "json"}));
  AddJsonFlag(*cmd, o->json);
  cmd->add_option("-o,--output", o->output, "Write the report to this file instead of stdout")
      ->type_name(kOutputFileType);
  AddRulesDirOption(*cmd, o->rules_dir);
  AddInputShapeOption(*cmd, o->input_shapes);
  for (const auto& flag : kFactFlags) {
    std::string help = std::string(flag.help) + " (fact " + flag.fact + ")";
    if (flag.kind == 's') {
      cmd->add_option_function<std::string>(
          flag.flag, [o, fact = flag.fact](const std::string& v) { o->text_facts[fact] = v; },
          help);
    } else if (flag.kind == 'n') {
      cmd->add_option_function<double>(
          flag.flag, [o, fact = flag.fact](double v) { o->number_facts[fact] = v; }, help);
    } else {
      cmd->add_option_function<bool>(
          flag.flag, [o, fact = flag.fact](bool v) { o->bool_facts[fact] = v; }, help);
    }
  }
  cmd->callback([o, &run] { run = [o] { return RunDecide(*o); }; });
}

}  // namespace porttool::cli
