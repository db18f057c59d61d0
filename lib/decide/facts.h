// Facts: the named, typed values the decision rules reason about. The catalogue
// (rules/decision/facts.json, explained in docs/facts.md) fixes every fact's name, type and unit;
// values come from the model, the target profile, the user's --facts file and flags, in that
// order of precedence (later wins), and each value remembers where it came from so the report can
// show it. A fact nobody supplied is simply absent: rules treat it as unknown, never as a default.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/json_file.h"

namespace porttool::decide {

enum class FactType { kInteger, kNumber, kBoolean, kString, kEnum };

struct FactSpec {
  std::string name;
  FactType type = FactType::kNumber;
  std::string unit;
  std::string source;  // model, target, user, derived
  std::string description;
  std::vector<std::string> values;  // kEnum only
  // Documented range of a numeric fact (inclusive); a value outside it, or not finite, is bad
  // input rather than something a rule could reason about.
  std::optional<double> min;
  std::optional<double> max;
};

class FactCatalog {
 public:
  static FactCatalog Load(const JsonFile& file);
  static FactCatalog Load(const std::filesystem::path& path) { return Load(JsonFile::Load(path)); }
  const FactSpec* Find(const std::string& name) const;
  const std::vector<FactSpec>& all() const { return specs_; }
  std::vector<std::string> Names() const;

 private:
  std::vector<FactSpec> specs_;
};

std::string FactTypeName(FactType type);
// Why `value` is not valid for `spec` ("expected an integer (bytes), got a string"), or nullopt.
std::optional<std::string> CheckFactValue(const FactSpec& spec, const nlohmann::json& value);

struct FactValue {
  nlohmann::json value;
  std::string origin;  // "model", "target rknn-rk3588", "--facts project.json", "--fps"
};

class Facts {
 public:
  // Sets (or overrides) a fact. Throws Error(kBadInput) for a name not in `catalog` or a value of
  // the wrong type, naming `origin`.
  void Set(const FactCatalog& catalog, const std::string& name, nlohmann::json value,
           const std::string& origin);
  const FactValue* Get(const std::string& name) const;
  const std::map<std::string, FactValue>& all() const { return values_; }
  // Display form: 921600, true, "1080p", 0.5.
  std::string Format(const std::string& name) const;

 private:
  std::map<std::string, FactValue> values_;
};

// Reads a --facts file: a JSON object with nested objects ({"performance": {"fps": 30}}) or
// dotted keys ({"performance.fps": 30}). Unknown names and wrong types are Error(kBadInput)
// naming the file, line and JSON pointer.
void LoadUserFacts(const std::filesystem::path& path, const FactCatalog& catalog, Facts& facts);
void LoadUserFacts(const JsonFile& file, const FactCatalog& catalog, Facts& facts);

// Pixels of a resolution: "720p" (1280x720), "1080p", "1440p", "4k", or "WxH"; nullopt if
// unparsable.
std::optional<int64_t> ResolutionPixels(const std::string& text);
// Adds derived facts (performance.pixels from performance.resolution).
void AddDerivedFacts(const FactCatalog& catalog, Facts& facts);

}  // namespace porttool::decide
