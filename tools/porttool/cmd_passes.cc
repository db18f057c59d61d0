// `porttool passes`: list the registered passes and stages with their options.
#include <fmt/format.h>

#include <iostream>

#include "passes/pass.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

int RunPasses(bool json) {
  nlohmann::json doc = nlohmann::json::array();
  for (const auto& pass : passes::Registry()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : pass->options()) options.push_back({{"key", o.key}, {"help", o.help}});
    doc.push_back({{"id", pass->id()}, {"summary", pass->summary()}, {"options", options}});
    if (json) continue;
    std::cout << fmt::format("{:<20} {}\n", pass->id(), pass->summary());
    for (const auto& o : pass->options()) {
      std::cout << fmt::format("{:<22}{{{}=...}} {}\n", "", o.key, o.help);
    }
  }
  if (json) PrintJson({{"passes", doc}});
  return kExitOk;
}

}  // namespace

void RegisterPasses(CLI::App& app, RunFn& run) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("passes", "List the passes and stages usable in `chain`");
  AddJsonFlag(*cmd, *json);
  cmd->callback([json, &run] { run = [json] { return RunPasses(*json); }; });
}

}  // namespace porttool::cli
