// JsonFile: a JSON document read from a rules or target file, kept with its text so that every
// validation error can name the file, the line and the JSON pointer of the offending value, and
// say what was expected. Rule, target and fact files all load through it; a malformed file is
// Error(kBadInput) (exit 3), never a crash or a silently ignored field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace porttool::decide {

class JsonFile {
 public:
  // Reads and parses `path`. Throws Error(kBadInput) "FILE:LINE:COL: JSON syntax error: ..." for
  // a syntax error, or naming the file when it cannot be read.
  static JsonFile Load(const std::filesystem::path& path);
  // Parses `text`, reporting errors against `display_name` (tests, embedded data).
  static JsonFile FromText(const std::string& text, const std::string& display_name);

  const nlohmann::json& root() const { return root_; }
  const std::string& name() const { return name_; }

  // 1-based line where the value at `pointer` starts; 0 when unknown.
  int LineOf(const std::string& pointer) const;
  // "FILE:LINE: at POINTER: WHAT" (the line when known).
  std::string Where(const std::string& pointer) const;
  // Throws Error(kBadInput) with Where(pointer) and `what`.
  [[noreturn]] void Fail(const std::string& pointer, const std::string& what) const;

  // Typed access by JSON pointer ("/rules/0/id"). Each throws through Fail with the expected
  // type or "missing required field" when the value is absent or has the wrong type.
  bool Has(const std::string& pointer) const;
  const nlohmann::json& At(const std::string& pointer) const;
  const nlohmann::json& Object(const std::string& pointer) const;
  const nlohmann::json& Array(const std::string& pointer) const;
  std::string String(const std::string& pointer) const;
  double Number(const std::string& pointer) const;
  // An integer that fits int64_t (2^63 and above are rejected, not wrapped).
  int64_t Integer(const std::string& pointer) const;
  // An integer in [min, max]: "expected an integer >= 0, got -1" otherwise.
  int64_t Integer(const std::string& pointer, int64_t min, int64_t max) const;
  // An array of integers, each in [min, max].
  std::vector<int64_t> Integers(const std::string& pointer, int64_t min, int64_t max) const;
  // A number in [min, max].
  double Number(const std::string& pointer, double min, double max) const;
  bool Bool(const std::string& pointer) const;
  std::vector<std::string> Strings(const std::string& pointer) const;
  // Optional variants: the default when absent, an error when present with the wrong type.
  std::string StringOr(const std::string& pointer, const std::string& fallback) const;
  double NumberOr(const std::string& pointer, double fallback) const;
  bool BoolOr(const std::string& pointer, bool fallback) const;
  // Rejects members of the object at `pointer` that are not in `allowed` (catches typos).
  void OnlyKeys(const std::string& pointer, const std::vector<std::string>& allowed) const;

 private:
  JsonFile(nlohmann::json root, std::string name, std::map<std::string, int> lines)
      : root_(std::move(root)), name_(std::move(name)), lines_(std::move(lines)) {}

  nlohmann::json root_;
  std::string name_;
  std::map<std::string, int> lines_;  // JSON pointer -> 1-based line of the value
};

// A name for a JSON value's type in error messages ("a string", "a number", ...).
std::string JsonTypeName(const nlohmann::json& value);
// Escapes one reference token for use in a JSON pointer (RFC 6901: ~ -> ~0, / -> ~1).
std::string PointerToken(const std::string& key);

}  // namespace porttool::decide
