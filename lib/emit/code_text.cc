// The escapers of code_text.h. Each walks the bytes once and never emits a byte that could end
// the comment, literal or line it sits in; the round-trip tests are in code_text_test.cc.
#include "lib/emit/code_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "lib/emit/html_text.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

bool Printable(char c) { return c >= 0x20 && c < 0x7F; }

std::string HexByte(char c) { return fmt::format("\\x{:02x}", static_cast<uint8_t>(c)); }

// Length (2-4) and code point of the well-formed UTF-8 sequence beyond ASCII at text[i], or 0.
size_t Utf8Sequence(std::string_view text, size_t i, uint32_t* cp) {
  for (size_t n = 2; n <= 4 && i + n <= text.size(); ++n) {
    if (!util::IsValidUtf8(text.substr(i, n))) continue;
    uint32_t v = static_cast<uint8_t>(text[i]) & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) v = (v << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    *cp = v;
    return n;
  }
  return 0;
}

}  // namespace

std::string CommentText(std::string_view text) {
  std::string out = !text.empty() && text.front() == '/' ? " " : "";
  for (char c : text) {
    if (!Printable(c)) {
      out += HexByte(c);
      continue;
    }
    char prev = out.empty() ? '\0' : out.back();
    // "*/" would end the comment, "/*" warns under -Wcomment, "??" may start a trigraph.
    if ((prev == '*' && c == '/') || (prev == '/' && c == '*') || (prev == '?' && c == '?')) {
      out += ' ';
    }
    out += c;
  }
  if (!out.empty() && out.back() == '\\') out.replace(out.size() - 1, 1, "\\x5c");
  if (!out.empty() && (out.back() == '*' || out.back() == '/')) out += ' ';
  return out;
}

std::string CStringBody(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += c;
    } else if (Printable(c)) {
      out += c;
    } else {
      // Three octal digits always: a following digit cannot extend the escape.
      out += fmt::format("\\{:03o}", static_cast<uint8_t>(c));
    }
  }
  return out;
}

std::string CStringLiteral(std::string_view text) { return "\"" + CStringBody(text) + "\""; }

std::string PythonStringBody(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    uint32_t cp = 0;
    if (c == '\\' || c == '\'' || c == '"') {
      out += '\\';
      out += c;
    } else if (Printable(c)) {
      out += c;
    } else if (static_cast<uint8_t>(c) < 0x80) {
      out += HexByte(c);
    } else if (size_t n = Utf8Sequence(text, i, &cp)) {
      out += cp > 0xFFFF ? fmt::format("\\U{:08x}", cp) : fmt::format("\\u{:04x}", cp);
      i += n;
      continue;
    } else {
      // surrogateescape's code point for an undecodable byte: U+DC80..U+DCFF.
      out += fmt::format("\\udc{:02x}", static_cast<uint8_t>(c));
    }
    ++i;
  }
  return out;
}

std::string PythonStringLiteral(std::string_view text) {
  return "\"" + PythonStringBody(text) + "\"";
}

std::string CMakeQuoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"' || c == '$' || c == '@') {
      out += '\\';
      out += c;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else {
      out += Printable(c) || static_cast<uint8_t>(c) >= 0x80 ? c : '?';
    }
  }
  return out + "\"";
}

std::string LineCommentText(std::string_view text) {
  std::string out;
  for (char c : text) out += Printable(c) ? std::string(1, c) : HexByte(c);
  return out;
}

std::string ShellWord(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./:=,+-@%").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(text);
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, Printable(c) ? c : '?');
  return out + "'";
}

std::string CIncludeName(std::string_view path, std::string_view what) {
  bool ok = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return Printable(c) && c != '"' && c != '\'' && c != '\\';
  });
  for (const char* bad : {"//", "/*", "??"}) ok = ok && path.find(bad) == std::string_view::npos;
  if (!ok) {
    ThrowUsage(
        "{} '{}' cannot be named in an #include \"...\" (C has no escapes there): use a path "
        "of printable ASCII without quotes, backslashes, \"//\", \"/*\" or \"??\"",
        what, DisplayText(path));
  }
  return "\"" + std::string(path) + "\"";
}

std::string JsonString(std::string_view text) { return util::DumpJson(std::string(text)); }

std::string MarkdownText(std::string_view text) {
  return util::ReplaceAll(DisplayText(text), "`", "\u2035");
}

}  // namespace porttool::emit
