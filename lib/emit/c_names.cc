#include "lib/emit/c_names.h"

#include <algorithm>
#include <cctype>

namespace porttool::emit {
namespace {

// C99/C11 keywords and C++ keywords (a header must work in both languages), plus names that
// standard headers define as macros.
const std::set<std::string, std::less<>>& Keywords() {
  static const std::set<std::string, std::less<>> kKeywords = {"alignas",
                                                               "alignof",
                                                               "and",
                                                               "and_eq",
                                                               "asm",
                                                               "auto",
                                                               "bitand",
                                                               "bitor",
                                                               "bool",
                                                               "break",
                                                               "case",
                                                               "catch",
                                                               "char",
                                                               "char8_t",
                                                               "char16_t",
                                                               "char32_t",
                                                               "class",
                                                               "co_await",
                                                               "co_return",
                                                               "co_yield",
                                                               "compl",
                                                               "concept",
                                                               "const",
                                                               "const_cast",
                                                               "consteval",
                                                               "constexpr",
                                                               "constinit",
                                                               "continue",
                                                               "decltype",
                                                               "default",
                                                               "delete",
                                                               "do",
                                                               "double",
                                                               "dynamic_cast",
                                                               "else",
                                                               "enum",
                                                               "explicit",
                                                               "export",
                                                               "extern",
                                                               "false",
                                                               "float",
                                                               "for",
                                                               "friend",
                                                               "goto",
                                                               "if",
                                                               "inline",
                                                               "int",
                                                               "long",
                                                               "mutable",
                                                               "namespace",
                                                               "new",
                                                               "noexcept",
                                                               "not",
                                                               "not_eq",
                                                               "nullptr",
                                                               "operator",
                                                               "or",
                                                               "or_eq",
                                                               "private",
                                                               "protected",
                                                               "public",
                                                               "register",
                                                               "reinterpret_cast",
                                                               "requires",
                                                               "restrict",
                                                               "return",
                                                               "short",
                                                               "signed",
                                                               "sizeof",
                                                               "static",
                                                               "static_assert",
                                                               "static_cast",
                                                               "struct",
                                                               "switch",
                                                               "template",
                                                               "this",
                                                               "thread_local",
                                                               "throw",
                                                               "true",
                                                               "try",
                                                               "typedef",
                                                               "typeid",
                                                               "typename",
                                                               "union",
                                                               "unsigned",
                                                               "using",
                                                               "virtual",
                                                               "void",
                                                               "volatile",
                                                               "wchar_t",
                                                               "while",
                                                               "xor",
                                                               "xor_eq",
                                                               "_Alignas",
                                                               "_Alignof",
                                                               "_Atomic",
                                                               "_Bool",
                                                               "_Complex",
                                                               "_Generic",
                                                               "_Imaginary",
                                                               "_Noreturn",
                                                               "_Static_assert",
                                                               "_Thread_local",
                                                               "NULL",
                                                               "EOF",
                                                               "errno",
                                                               "assert"};
  return kKeywords;
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string SanitizeCIdentifier(std::string_view text) {
  std::string out;
  for (char c : text) {
    char mapped = IsIdentChar(c) && (c & 0x80) == 0 ? c : '_';
    // One '_' per run: double underscores are reserved in C++.
    if (mapped == '_' && (out.empty() || out.back() == '_')) continue;
    out += mapped;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) return "t";
  // A prefix rather than a suffix: macros append `_FIELD`, and `INT__BYTES` would hold a double
  // underscore.
  if (std::isdigit(static_cast<unsigned char>(out.front())) || Keywords().count(out)) {
    out.insert(0, "t_");
  }
  return out;
}

std::string ToUpper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string ToLower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool IsCIdentifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front()))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c & 0x80) == 0 && IsIdentChar(c); });
}

CNameTable::CNameTable(std::vector<std::string> fields) : fields_(std::move(fields)) {}

bool CNameTable::Free(const std::string& stem) const {
  std::string upper = ToUpper(stem);
  return std::none_of(fields_.begin(), fields_.end(), [&](const std::string& field) {
    return macro_owner_.count(upper + "_" + field) > 0;
  });
}

void CNameTable::Claim(const std::string& stem, const std::string& name) {
  std::string upper = ToUpper(stem);
  for (const auto& field : fields_) macro_owner_[upper + "_" + field] = name;
  assigned_[name] = stem;
}

const std::string& CNameTable::Assign(const std::string& name) {
  if (auto it = assigned_.find(name); it != assigned_.end()) return it->second;
  std::string base = SanitizeCIdentifier(name);
  std::string stem = base;
  for (int n = 2; !Free(stem); ++n) stem = base + "_" + std::to_string(n);
  if (stem != base) {
    // Report who held the identifier first: the owner of any of its macro names.
    std::string upper = ToUpper(base);
    std::string conflict;
    for (const auto& field : fields_) {
      if (auto it = macro_owner_.find(upper + "_" + field); it != macro_owner_.end()) {
        conflict = it->second;
        break;
      }
    }
    collisions_.push_back({name, stem, conflict});
  }
  Claim(stem, name);
  return assigned_[name];
}

}  // namespace porttool::emit
