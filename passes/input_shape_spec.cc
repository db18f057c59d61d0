#include "passes/input_shape_spec.h"

#include <charconv>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::passes {
namespace {

bool IsNumber(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<int64_t> ParseDims(const std::string& spec, const std::string& dims_text) {
  std::vector<int64_t> dims;
  if (dims_text == "scalar") return dims;
  for (const auto& part : util::Split(dims_text, 'x')) {
    int64_t v = -1;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 0) {
      ThrowUsage(
          "input shape '{}': '{}' is not a non-negative integer dim (expected e.g. "
          "x:1x3x640x640)",
          spec, part);
    }
    dims.push_back(v);
  }
  return dims;
}

// `x:1,3,640,640` splits into "x:1", "3", "640", "640": name the slip instead of complaining
// about a spec "3" without a name.
[[noreturn]] void ThrowCommaDims(const std::string& raw, const std::vector<std::string>& pieces,
                                 size_t first_bad) {
  std::string fixed = pieces[first_bad - 1];
  for (size_t i = first_bad; i < pieces.size() && IsNumber(pieces[i]); ++i)
    fixed += "x" + pieces[i];
  ThrowUsage(
      "input shape '{}': dims are separated by 'x', not ',' (',' separates inputs): "
      "write {}",
      raw, fixed);
}

}  // namespace

shape::InputShapes ParseInputShapes(const std::vector<std::string>& specs) {
  shape::InputShapes out;
  for (const auto& raw : specs) {
    std::string normalized = raw;
    for (char& c : normalized) {
      if (c == ';') c = ',';
    }
    std::vector<std::string> pieces = util::Split(normalized, ',');
    for (size_t i = 0; i < pieces.size(); ++i) {
      const std::string& spec = pieces[i];
      if (spec.empty()) continue;
      auto colon = spec.rfind(':');
      if (colon == std::string::npos && IsNumber(spec) && i > 0 &&
          pieces[i - 1].find(':') != std::string::npos) {
        ThrowCommaDims(raw, pieces, i);
      }
      if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
        ThrowUsage("input shape '{}': expected NAME:DIMS, e.g. x:1x3x640x640", spec);
      }
      std::string name = spec.substr(0, colon);
      if (out.count(name)) ThrowUsage("input shape: input '{}' given twice", name);
      out[name] = ParseDims(spec, spec.substr(colon + 1));
    }
  }
  return out;
}

}  // namespace porttool::passes
