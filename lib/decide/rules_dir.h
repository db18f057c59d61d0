// The rules directory: decision/{facts,table,remedies}.json and targets/*.json. Which directory
// is used is the caller's choice, passed in (the CLI resolves --rules-dir, $PORTTOOL_RULES_DIR,
// the installed share/porttool/rules, then the source tree); the library keeps no default of its
// own beyond listing and validating what it is given.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace porttool::decide {

// Every rules and target file under `rules_dir`, sorted. Error(kBadInput) when there is none.
std::vector<std::filesystem::path> ShippedRuleFiles(const std::filesystem::path& rules_dir);

// Validates one rules or target file (the kind is read from its "schema" field); decision tables
// are checked against <rules_dir>/decision/facts.json. Throws Error(kBadInput) naming file, line,
// JSON pointer and what was expected. Returns the kind.
std::string ValidateRuleFile(const std::filesystem::path& rules_dir,
                             const std::filesystem::path& path);

}  // namespace porttool::decide
