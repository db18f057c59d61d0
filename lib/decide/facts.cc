#include "lib/decide/facts.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

FactType ParseFactType(const JsonFile& f, const std::string& pointer) {
  static const std::map<std::string, FactType> kTypes = {{"integer", FactType::kInteger},
                                                         {"number", FactType::kNumber},
                                                         {"boolean", FactType::kBoolean},
                                                         {"string", FactType::kString},
                                                         {"enum", FactType::kEnum}};
  std::string name = f.String(pointer);
  auto it = kTypes.find(name);
  if (it == kTypes.end()) {
    f.Fail(pointer, "unknown fact type \"" + name +
                        "\" (expected integer, number, boolean, "
                        "string or enum)");
  }
  return it->second;
}

}  // namespace

std::string FactTypeName(FactType type) {
  switch (type) {
    case FactType::kInteger:
      return "integer";
    case FactType::kNumber:
      return "number";
    case FactType::kBoolean:
      return "boolean";
    case FactType::kString:
      return "string";
    case FactType::kEnum:
      return "enum";
  }
  return "?";
}

FactCatalog FactCatalog::Load(const JsonFile& f) {
  FactCatalog catalog;
  f.OnlyKeys("", {"schema", "description", "facts"});
  // As rules validate reads it: decide must not accept a catalog validate refuses.
  if (f.String("/schema") != "porttool.facts/1") f.Fail("/schema", "expected \"porttool.facts/1\"");
  const auto& facts = f.Array("/facts");
  for (size_t i = 0; i < facts.size(); ++i) {
    std::string p = "/facts/" + std::to_string(i);
    f.OnlyKeys(p, {"name", "type", "unit", "min", "max", "source", "description", "values"});
    FactSpec spec;
    spec.name = f.String(p + "/name");
    spec.type = ParseFactType(f, p + "/type");
    spec.unit = f.StringOr(p + "/unit", "");
    spec.source = f.String(p + "/source");
    spec.description = f.String(p + "/description");
    if (spec.type == FactType::kEnum) spec.values = f.Strings(p + "/values");
    if (f.Has(p + "/min")) spec.min = f.Number(p + "/min");
    if (f.Has(p + "/max")) spec.max = f.Number(p + "/max");
    if (catalog.Find(spec.name)) f.Fail(p + "/name", "fact \"" + spec.name + "\" is listed twice");
    catalog.specs_.push_back(std::move(spec));
  }
  return catalog;
}

const FactSpec* FactCatalog::Find(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> FactCatalog::Names() const {
  std::vector<std::string> names;
  for (const auto& s : specs_) names.push_back(s.name);
  return names;
}

namespace {

std::optional<std::string> CheckFactType(const FactSpec& spec, const nlohmann::json& value) {
  auto expected = [&](const std::string& what) {
    return fmt::format(
        "expected {}{}, got {}{}", what, spec.unit.empty() ? "" : fmt::format(" ({})", spec.unit),
        JsonTypeName(value), value.is_primitive() ? fmt::format(" {}", value.dump()) : "");
  };
  switch (spec.type) {
    case FactType::kInteger:
      if (value.is_number_integer() ||
          (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>())) {
        return std::nullopt;
      }
      return expected("an integer");
    case FactType::kNumber:
      if (value.is_number()) return std::nullopt;
      return expected("a number");
    case FactType::kBoolean:
      if (value.is_boolean()) return std::nullopt;
      return expected("true or false");
    case FactType::kString:
      if (value.is_string()) return std::nullopt;
      return expected("a string");
    case FactType::kEnum:
      if (value.is_string() && std::find(spec.values.begin(), spec.values.end(),
                                         value.get<std::string>()) != spec.values.end()) {
        return std::nullopt;
      }
      return expected("one of " + util::Join(spec.values, ", "));
  }
  return std::nullopt;
}

// Why a number is outside the fact's documented range, or nullopt.
// Integers must also fit int64_t, which Facts::Set converts them to.
std::optional<std::string> CheckRange(const FactSpec& spec, double v) {
  constexpr double kInt64Limit = 9.2e18;
  double lo = spec.min.value_or(-HUGE_VAL), hi = spec.max.value_or(HUGE_VAL);
  // Even when facts.json documents a wider range (its "max": 1e308 is a valid number).
  if (spec.type == FactType::kInteger) {
    lo = std::max(lo, -kInt64Limit);
    hi = std::min(hi, kInt64Limit);
  }
  if (std::isfinite(v) && v >= lo && v <= hi) return std::nullopt;
  return fmt::format(
      "{} is out of range: expected a finite number from {:g} to {:g}{} "
      "(docs/facts.md lists every fact's range)",
      std::isnan(v) ? "nan" : fmt::format("{:g}", v), lo, hi,
      spec.unit.empty() ? "" : " " + spec.unit);
}

}  // namespace

std::optional<std::string> CheckFactValue(const FactSpec& spec, const nlohmann::json& value) {
  if (value.is_number() && spec.type != FactType::kBoolean) {
    if (auto type_error = CheckFactType(spec, value)) return type_error;
    return CheckRange(spec, value.get<double>());
  }
  return CheckFactType(spec, value);
}

void Facts::Set(const FactCatalog& catalog, const std::string& name, nlohmann::json value,
                const std::string& origin) {
  const FactSpec* spec = catalog.Find(name);
  if (!spec) {
    auto close = util::ClosestNames(name, catalog.Names(), 3);
    ThrowBadInput("{}: unknown fact \"{}\"{} (docs/facts.md lists every fact)", origin, name,
                  close.empty() ? "" : "; did you mean " + util::Join(close, ", ") + "?");
  }
  if (auto error = CheckFactValue(*spec, value)) {
    ThrowBadInput("{}: fact \"{}\": {}", origin, name, *error);
  }
  if (spec->type == FactType::kInteger) value = value.get<int64_t>();
  values_[name] = FactValue{std::move(value), origin};
}

const FactValue* Facts::Get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::string Facts::Format(const std::string& name) const {
  const FactValue* v = Get(name);
  if (!v) return "?";
  if (v->value.is_string()) return v->value.get<std::string>();
  if (v->value.is_number_float()) return fmt::format("{:g}", v->value.get<double>());
  return v->value.dump();
}

namespace {

void LoadFactObject(const JsonFile& f, const std::string& pointer, const std::string& prefix,
                    const FactCatalog& catalog, Facts& facts) {
  for (const auto& [key, value] : f.Object(pointer).items()) {
    std::string name = prefix.empty() ? key : prefix + "." + key;
    std::string p = pointer + "/" + PointerToken(key);
    if (value.is_object()) {
      LoadFactObject(f, p, name, catalog, facts);
      continue;
    }
    const FactSpec* spec = catalog.Find(name);
    if (!spec) {
      auto close = util::ClosestNames(name, catalog.Names(), 3);
      f.Fail(p,
             fmt::format("unknown fact \"{}\" (expected a fact from docs/facts.md{})", name,
                         close.empty() ? "" : "; did you mean " + util::Join(close, ", ") + "?"));
    }
    if (auto error = CheckFactValue(*spec, value)) f.Fail(p, "fact \"" + name + "\": " + *error);
    facts.Set(catalog, name, value, "facts file " + f.name());
  }
}

}  // namespace

void LoadUserFacts(const JsonFile& file, const FactCatalog& catalog, Facts& facts) {
  LoadFactObject(file, "", "", catalog, facts);
}

void LoadUserFacts(const std::filesystem::path& path, const FactCatalog& catalog, Facts& facts) {
  LoadUserFacts(JsonFile::Load(path), catalog, facts);
}

std::optional<int64_t> ResolutionPixels(const std::string& text) {
  static const std::map<std::string, int64_t> kNamed = {
      {"480p", 640 * 480},    {"720p", 1280 * 720}, {"1080p", 1920 * 1080},
      {"1440p", 2560 * 1440}, {"4k", 3840 * 2160},  {"2160p", 3840 * 2160}};
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto it = kNamed.find(lower); it != kNamed.end()) return it->second;
  std::smatch m;
  static const std::regex kWxH(R"((\d{1,6})x(\d{1,6}))");
  if (std::regex_match(lower, m, kWxH)) return std::stoll(m[1]) * std::stoll(m[2]);
  return std::nullopt;
}

void AddDerivedFacts(const FactCatalog& catalog, Facts& facts) {
  const FactValue* resolution = facts.Get("performance.resolution");
  if (!resolution || facts.Get("performance.pixels")) return;
  auto pixels = ResolutionPixels(resolution->value.get<std::string>());
  if (!pixels) {
    ThrowBadInput(
        "{}: fact \"performance.resolution\": cannot read \"{}\" (expected 720p, 1080p, "
        "1440p, 4k or WxH such as 640x640)",
        resolution->origin, resolution->value.get<std::string>());
  }
  facts.Set(catalog, "performance.pixels", *pixels, "derived from performance.resolution");
}

}  // namespace porttool::decide
