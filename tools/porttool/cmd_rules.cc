// `porttool rules validate [FILE...]`: checks decision rule, fact, remedy and target files.
#include <iostream>
#include <nlohmann/json.hpp>

#include "lib/decide/rules_dir.h"
#include "lib/stages/target.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct RulesOptions {
  std::vector<std::string> files;
  std::string rules_dir;
  bool json = false;
};

// Validates every file (default: all shipped ones); the first malformed file stops with exit 3
// and its file/line/pointer message.
int RunRulesValidate(const RulesOptions& o) {
  std::filesystem::path rules_dir = ResolveRulesDir(o.rules_dir);
  std::vector<std::filesystem::path> files(o.files.begin(), o.files.end());
  if (files.empty()) files = decide::ShippedRuleFiles(rules_dir);
  nlohmann::json report = nlohmann::json::array();
  for (const auto& f : files) {
    std::string kind = stages::ValidateRuleFile(rules_dir, f);
    report.push_back({{"file", f.string()}, {"kind", kind}, {"ok", true}});
    if (!o.json) std::cout << "ok  " << kind << "  " << f.string() << "\n";
  }
  if (o.json) PrintJson({{"ok", true}, {"files", report}});
  return kExitOk;
}

}  // namespace

void RegisterRules(CLI::App& app, RunFn& run) {
  auto o = std::make_shared<RulesOptions>();
  auto* rules = app.add_subcommand("rules", "Decision rules and target profiles");
  rules->require_subcommand(1);
  auto* validate = rules->add_subcommand(
      "validate", "Validate rule and target JSON files (default: every shipped file)");
  validate->footer("Example:\n  porttool rules validate\n  porttool rules validate my-target.json");
  validate->add_option("files", o->files, "Rule or target files to validate");
  AddRulesDirOption(*validate, o->rules_dir);
  AddJsonFlag(*validate, o->json);
  validate->callback([o, &run] { run = [o] { return RunRulesValidate(*o); }; });
}

}  // namespace porttool::cli
