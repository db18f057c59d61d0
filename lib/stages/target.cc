#include "lib/stages/target.h"

#include <set>

#include "lib/decide/json_file.h"
#include "lib/decide/remedies.h"
#include "lib/decide/rules_dir.h"
#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "passes/input_shape_spec.h"

namespace porttool::stages {
namespace {

// NAME:DIMS entries, with "*" standing for any input. Error(kUsage) from the shape grammar.
std::vector<std::pair<std::string, std::vector<int64_t>>> ParseDefaultShapes(
    const std::string& text) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (std::string entry : util::Split(text, ',')) {
    auto colon = entry.rfind(':');
    if (colon == std::string::npos) ThrowUsage("'{}': expected NAME:DIMS", entry);
    std::string name = entry.substr(0, colon);
    // The shape grammar needs a real name; "*" is this field's own wildcard.
    shape::InputShapes parsed = passes::ParseInputShapes({"_:" + entry.substr(colon + 1)});
    out.emplace_back(name, parsed.at("_"));
  }
  return out;
}

[[noreturn]] void FailAt(const std::string& file, const std::string& pointer,
                         const std::string& what) {
  decide::JsonFile::Load(file).Fail(pointer, what);
}

bool Agrees(const onnx::ValueInfoProto& input, const std::vector<int64_t>& dims) {
  const auto& type = input.type().tensor_type();
  if (!type.has_shape() || type.shape().dim_size() != static_cast<int>(dims.size())) return false;
  for (int i = 0; i < type.shape().dim_size(); ++i) {
    const auto& d = type.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() != dims[i]) return false;
  }
  return true;
}

}  // namespace

void ValidatePortFields(const decide::TargetProfile& target) {
  if (!target.rewrites.empty()) {
    try {
      passes::ValidatePipeline(passes::ParsePipeline(target.rewrites));
    } catch (const Error& e) {
      FailAt(target.rewrites_file, "/rewrites", e.what());
    }
  }
  if (!target.default_input_shape.empty()) {
    try {
      ParseDefaultShapes(target.default_input_shape);
    } catch (const Error& e) {
      FailAt(target.default_input_shape_file, "/default_input_shape", e.what());
    }
  }
}

decide::TargetProfile LoadTargetProfile(const std::filesystem::path& rules_dir,
                                        const std::string& name_or_path) {
  decide::TargetProfile target = decide::LoadTarget(rules_dir, name_or_path);
  ValidatePortFields(target);
  return target;
}

std::string ValidateRuleFile(const std::filesystem::path& rules_dir,
                             const std::filesystem::path& path) {
  std::string kind = decide::ValidateRuleFile(rules_dir, path);
  if (kind == "target") ValidatePortFields(decide::LoadTargetFile(path));
  if (kind == "remedies") ValidateRemedyPasses(path);
  return kind;
}

void ValidateRemedyPasses(const std::filesystem::path& remedies_json) {
  decide::JsonFile f = decide::JsonFile::Load(remedies_json);
  auto rules = decide::LoadRemedies(f);
  for (size_t i = 0; i < rules.size(); ++i) {
    if (!rules[i].pass) continue;
    try {
      passes::FindPass(*rules[i].pass);
    } catch (const Error& e) {
      f.Fail("/remedies/" + std::to_string(i) + "/pass", e.what());
    }
  }
}

std::vector<passes::PipelineStep> TargetRewrites(const decide::TargetProfile& target) {
  if (target.rewrites.empty()) return {};
  return passes::ParsePipeline(target.rewrites);
}

shape::InputShapes DefaultInputShapes(const decide::TargetProfile& target, const io::Model& model) {
  shape::InputShapes pins;
  if (target.default_input_shape.empty()) return pins;
  auto entries = ParseDefaultShapes(target.default_input_shape);
  std::set<std::string> initializers;
  for (const auto& init : model.proto.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : model.proto.graph().input()) {
    if (initializers.count(input.name())) continue;
    for (const auto& [name, dims] : entries) {
      bool named = name == input.name();
      if (named || (name == "*" && Agrees(input, dims))) {
        pins[input.name()] = dims;
        if (named) break;
      }
    }
  }
  return pins;
}

shape::InputValues EffectiveInputValues(const decide::TargetProfile& target, const io::Model& model,
                                        const shape::InputValues& given) {
  shape::InputValues values;
  std::set<std::string> initializers;
  for (const auto& init : model.proto.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : model.proto.graph().input()) {
    auto it = target.input_values.find(input.name());
    if (it != target.input_values.end() && !initializers.count(input.name())) {
      values.insert(*it);
    }
  }
  for (const auto& [name, value] : given) values[name] = value;
  return values;
}

}  // namespace porttool::stages
