#include "lib/decide/rules_dir.h"

#include <algorithm>

#include "lib/decide/facts.h"
#include "lib/decide/remedies.h"
#include "lib/decide/rules.h"
#include "lib/decide/target.h"
#include "lib/util/error.h"

namespace porttool::decide {

std::vector<std::filesystem::path> ShippedRuleFiles(const std::filesystem::path& rules_dir) {
  std::vector<std::filesystem::path> files;
  for (const char* sub : {"decision", "targets"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(rules_dir / sub, ec)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    }
  }
  if (files.empty()) {
    ThrowBadInput("no rule files under {} (the rules directory holds decision/ and targets/)",
                  rules_dir.string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ValidateRuleFile(const std::filesystem::path& rules_dir,
                             const std::filesystem::path& path) {
  JsonFile f = JsonFile::Load(path);
  std::string schema = f.String("/schema");
  if (schema == "porttool.facts/1") {
    FactCatalog::Load(f);
  } else if (schema == "porttool.decision/1") {
    LoadDecisionTable(f, FactCatalog::Load(rules_dir / "decision" / "facts.json"));
  } else if (schema == "porttool.remedies/1") {
    LoadRemedies(f);
  } else if (schema == "porttool.target/1") {
    LoadTargetFile(path);
  } else {
    f.Fail("/schema", "unknown schema \"" + schema +
                          "\" (expected porttool.facts/1, "
                          "porttool.decision/1, porttool.remedies/1 or porttool.target/1)");
  }
  return schema.substr(9, schema.size() - 11);
}

}  // namespace porttool::decide
