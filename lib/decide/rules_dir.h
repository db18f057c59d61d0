// Where the shipped rule and target files live. Order: an explicit override (the CLI's
// --rules-dir), then $PORTTOOL_RULES_DIR, then <source dir>/rules (PORTTOOL_SOURCE_DIR, compiled
// in). The directory holds decision/{facts,table,remedies}.json and targets/*.json.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace porttool::decide {

std::filesystem::path RulesDir();
void SetRulesDirOverride(const std::filesystem::path& dir);  // empty: clear

// Every shipped rules and target file, sorted.
std::vector<std::filesystem::path> ShippedRuleFiles();

// Validates one rules or target file (the kind is read from its "schema" field). Throws
// Error(kBadInput) naming file, line, JSON pointer and what was expected. Returns the kind.
std::string ValidateRuleFile(const std::filesystem::path& path);

}  // namespace porttool::decide
