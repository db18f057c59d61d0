// Bytes -> the rules/targets/facts JSON loaders: the first byte picks fact catalog, decision
// table, target profile or user facts (the last two checked against the shipped catalog).
#include "lib/decide/facts.h"
#include "lib/decide/json_file.h"
#include "lib/decide/rules.h"
#include "lib/decide/rules_dir.h"
#include "lib/decide/target.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  using namespace porttool::decide;
  static const FactCatalog catalog = FactCatalog::Load(RulesDir() / "decision" / "facts.json");
  uint8_t which = fuzz::Selector(data, size) % 4;
  return fuzz::Guard([&] {
    std::string text(fuzz::AsView(data, size));
    switch (which) {
      case 0:
        FactCatalog::Load(JsonFile::FromText(text, "facts.json"));
        break;
      case 1:
        LoadDecisionTable(JsonFile::FromText(text, "table.json"), catalog);
        break;
      case 2:
        LoadTargetFile(fuzz::WriteScratch("target.json", text));
        break;
      default: {
        Facts facts;
        LoadUserFacts(JsonFile::FromText(text, "project.json"), catalog, facts);
      }
    }
  });
}
