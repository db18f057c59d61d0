#include "lib/decide/json_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>

#include "lib/io/input_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

// Records the line of every value by JSON pointer. Runs only on text nlohmann already accepted,
// so it can assume well-formed JSON and stay small.
class LineScanner {
 public:
  explicit LineScanner(const std::string& text) : text_(text) {}
  std::map<std::string, int> Scan() {
    SkipSpace();
    Value("");
    return std::move(lines_);
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  std::string ReadString() {
    std::string out;
    ++pos_;  // opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        out += text_[pos_ + 1] == '/' ? '/' : text_[pos_ + 1];
        pos_ += 2;
      } else {
        out += text_[pos_++];
      }
    }
    ++pos_;  // closing quote
    return out;
  }
  void Value(const std::string& pointer) {
    lines_[pointer] = line_;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      SkipSpace();
      while (text_[pos_] != '}') {
        std::string key = ReadString();
        SkipSpace();
        ++pos_;  // ':'
        SkipSpace();
        Value(pointer + "/" + PointerToken(key));
        SkipSpace();
        if (text_[pos_] == ',') ++pos_;
        SkipSpace();
      }
      ++pos_;
    } else if (c == '[') {
      ++pos_;
      SkipSpace();
      for (int i = 0; text_[pos_] != ']'; ++i) {
        Value(pointer + "/" + std::to_string(i));
        SkipSpace();
        if (text_[pos_] == ',') ++pos_;
        SkipSpace();
      }
      ++pos_;
    } else if (c == '"') {
      ReadString();
    } else {
      while (pos_ < text_.size() && !std::strchr(",]} \t\r\n", text_[pos_])) ++pos_;
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::map<std::string, int> lines_;
};

std::pair<int, int> LineAndColumn(const std::string& text, size_t byte) {
  int line = 1, column = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

std::string JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {

// Rule, target and facts files nest a few levels; a hostile one nested 100000 deep would make the
// pointer index quadratic (and recursion deep). Checked on the raw text, before parsing.
constexpr int kMaxJsonDepth = 64;

std::optional<size_t> TooDeepAt(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::nullopt;
}

// nlohmann rejects a number beyond double's range (1e400) without a position. Put a marker string
// in its place and parse again, so the error names the line and JSON pointer like any other.
[[noreturn]] void ThrowNumberOutOfRange(const std::string& text, const std::string& name,
                                        const std::string& what) {
  static const std::regex kToken("parsing '([^']*)'");
  static const std::string kMarker = "porttool:number-out-of-range";
  std::smatch m;
  std::string token = std::regex_search(what, m, kToken) ? m[1].str() : "";
  size_t at = token.empty() ? std::string::npos : text.find(token);
  if (at != std::string::npos) {
    std::string marked = text;
    marked.replace(at, token.size(), "\"" + kMarker + "\"");
    JsonFile f = JsonFile::FromText(marked, name);
    const nlohmann::json flat = f.root().flatten();  // a local: items() does not own it
    for (const auto& [pointer, value] : flat.items()) {
      if (value == kMarker) {
        f.Fail(pointer, fmt::format("number {} is out of range (not a finite double)", token));
      }
    }
  }
  ThrowBadInput("{}: a number is out of range: {}", name, what);
}

}  // namespace

JsonFile JsonFile::FromText(const std::string& text, const std::string& display_name) {
  if (auto at = TooDeepAt(text)) {
    auto [line, column] = LineAndColumn(text, *at + 1);
    ThrowBadInput(
        "{}:{}:{}: JSON nested deeper than {} levels (expected a flat rules, target or "
        "facts file)",
        display_name, line, column, kMaxJsonDepth);
  }
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, column] = LineAndColumn(text, e.byte);
    std::string what = e.what();
    // nlohmann's message repeats "[json.exception.parse_error.101] parse error at line..".
    size_t cut = what.find(": ", what.find("parse error"));
    ThrowBadInput(
        "{}:{}:{}: JSON syntax error: {} (expected valid JSON; check commas, quotes and "
        "brackets near here)",
        display_name, line, column, cut == std::string::npos ? what : what.substr(cut + 2));
  } catch (const nlohmann::json::out_of_range& e) {
    ThrowNumberOutOfRange(text, display_name, e.what());
  }
  return JsonFile(std::move(root), display_name, LineScanner(text).Scan());
}

JsonFile JsonFile::Load(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    ThrowBadInput("{}: not a readable file (expected a JSON rules or target file)", path.string());
  }
  return FromText(io::ReadInputFile(path, "JSON file"), path.string());
}

int JsonFile::LineOf(const std::string& pointer) const {
  // Fall back to the closest enclosing value that has a line (e.g. a missing member).
  std::string p = pointer;
  while (true) {
    auto it = lines_.find(p);
    if (it != lines_.end()) return it->second;
    if (p.empty()) return 0;
    p = p.substr(0, p.rfind('/'));
  }
}

std::string JsonFile::Where(const std::string& pointer) const {
  int line = LineOf(pointer);
  std::string at = pointer.empty() ? "/" : pointer;
  return line > 0 ? fmt::format("{}:{}: at {}", name_, line, at)
                  : fmt::format("{}: at {}", name_, at);
}

void JsonFile::Fail(const std::string& pointer, const std::string& what) const {
  ThrowBadInput("{}: {}", Where(pointer), what);
}

bool JsonFile::Has(const std::string& pointer) const {
  return root_.contains(nlohmann::json::json_pointer(pointer));
}

const nlohmann::json& JsonFile::At(const std::string& pointer) const {
  if (!Has(pointer)) Fail(pointer, "missing required field");
  return root_.at(nlohmann::json::json_pointer(pointer));
}

namespace {
template <typename Pred>
const nlohmann::json& Typed(const JsonFile& f, const std::string& pointer, Pred ok,
                            const char* expected) {
  const nlohmann::json& v = f.At(pointer);
  if (!ok(v)) f.Fail(pointer, fmt::format("expected {}, got {}", expected, JsonTypeName(v)));
  return v;
}
}  // namespace

const nlohmann::json& JsonFile::Object(const std::string& pointer) const {
  return Typed(
      *this, pointer, [](const auto& v) { return v.is_object(); }, "an object");
}
const nlohmann::json& JsonFile::Array(const std::string& pointer) const {
  return Typed(
      *this, pointer, [](const auto& v) { return v.is_array(); }, "an array");
}
std::string JsonFile::String(const std::string& pointer) const {
  return Typed(
             *this, pointer, [](const auto& v) { return v.is_string(); }, "a string")
      .get<std::string>();
}
double JsonFile::Number(const std::string& pointer) const {
  return Typed(
             *this, pointer, [](const auto& v) { return v.is_number(); }, "a number")
      .get<double>();
}
int64_t JsonFile::Integer(const std::string& pointer) const {
  return Integer(pointer, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
}

namespace {
// "an integer >= 0", "an integer in [1, 64]": the range in the words of the error message.
std::string IntegerRangeText(int64_t min, int64_t max) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (min == kMin && max == kMax) return "an integer";
  if (max == kMax) return fmt::format("an integer >= {}", min);
  if (min == kMin) return fmt::format("an integer <= {}", max);
  return fmt::format("an integer in [{}, {}]", min, max);
}
}  // namespace

int64_t JsonFile::Integer(const std::string& pointer, int64_t min, int64_t max) const {
  const nlohmann::json& v = At(pointer);
  std::string expected = IntegerRangeText(min, max);
  if (!v.is_number_integer()) {
    // A float that happens to be whole (3.0) is still not an integer field's value.
    Fail(pointer,
         fmt::format("expected {}, got {}", expected, v.is_number() ? v.dump() : JsonTypeName(v)));
  }
  // nlohmann stores 2^63 and above as unsigned; get<int64_t>() would wrap them negative.
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    Fail(pointer, fmt::format("expected {}, got {} (beyond 2^63 - 1)", expected, v.dump()));
  }
  int64_t value = v.get<int64_t>();
  if (value < min || value > max) {
    Fail(pointer, fmt::format("expected {}, got {}", expected, value));
  }
  return value;
}

std::vector<int64_t> JsonFile::Integers(const std::string& pointer, int64_t min,
                                        int64_t max) const {
  std::vector<int64_t> out;
  const auto& arr = Array(pointer);
  for (size_t i = 0; i < arr.size(); ++i) {
    out.push_back(Integer(pointer + "/" + std::to_string(i), min, max));
  }
  return out;
}

double JsonFile::Number(const std::string& pointer, double min, double max) const {
  double value = Number(pointer);
  if (!(value >= min && value <= max)) {
    Fail(pointer, fmt::format("expected a number in [{}, {}], got {}", min, max, value));
  }
  return value;
}
bool JsonFile::Bool(const std::string& pointer) const {
  return Typed(
             *this, pointer, [](const auto& v) { return v.is_boolean(); }, "true or false")
      .get<bool>();
}
std::vector<std::string> JsonFile::Strings(const std::string& pointer) const {
  std::vector<std::string> out;
  const auto& arr = Array(pointer);
  for (size_t i = 0; i < arr.size(); ++i) out.push_back(String(pointer + "/" + std::to_string(i)));
  return out;
}
std::string JsonFile::StringOr(const std::string& pointer, const std::string& fallback) const {
  return Has(pointer) ? String(pointer) : fallback;
}
double JsonFile::NumberOr(const std::string& pointer, double fallback) const {
  return Has(pointer) ? Number(pointer) : fallback;
}
bool JsonFile::BoolOr(const std::string& pointer, bool fallback) const {
  return Has(pointer) ? Bool(pointer) : fallback;
}

void JsonFile::OnlyKeys(const std::string& pointer, const std::vector<std::string>& allowed) const {
  for (const auto& [key, value] : Object(pointer).items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    auto close = util::ClosestNames(key, allowed, 1);
    Fail(pointer + "/" + PointerToken(key),
         fmt::format("unknown field \"{}\" (expected one of: {}{})", key, util::Join(allowed, ", "),
                     close.empty() ? "" : "; did you mean \"" + close[0] + "\"?"));
  }
}

}  // namespace porttool::decide
