#include "lib/emit/html_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace porttool::emit {
namespace {

// Length of the well-formed UTF-8 sequence at text[i] (1-4) and its code point, or 0 when the
// bytes there are not one (overlong forms, surrogates and code points past U+10FFFF included).
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* code_point) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  size_t len;
  uint32_t cp;
  uint32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return len;
}

// Characters that would hide or reorder the text around them, or that no font draws.
bool IsInvisible(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF ||
         (cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xFFF0 && cp <= 0xFFFF && cp != 0xFFFD);
}

// A C0 control or DEL as its Unicode control picture (U+2400 + code, U+2421 for DEL): visible in
// any font that has the block, and no backslash sequence a reader could take for an escape the
// page forgot to apply.
std::string ControlPicture(uint32_t cp) {
  uint32_t pic = cp == 0x7F ? 0x2421 : 0x2400 + cp;
  std::string out(3, '\0');
  out[0] = static_cast<char>(0xE0 | (pic >> 12));
  out[1] = static_cast<char>(0x80 | ((pic >> 6) & 0x3F));
  out[2] = static_cast<char>(0x80 | (pic & 0x3F));
  return out;
}

}  // namespace

std::string DisplayText(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    uint32_t cp = 0;
    size_t len = DecodeUtf8(raw, i, &cp);
    if (len == 0) {
      out += fmt::format("⟨0x{:02X}⟩", static_cast<uint8_t>(raw[i]));
      ++i;
      continue;
    }
    if (cp < 0x20 || cp == 0x7F) {
      out += ControlPicture(cp);
    } else if (IsInvisible(cp)) {
      out += fmt::format("⟨U+{:04X}⟩", cp);
    } else {
      out.append(raw.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string TruncateDisplay(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    // Count code points by their lead bytes (DisplayText output is valid UTF-8).
    if ((static_cast<uint8_t>(text[i]) & 0xC0) == 0x80) continue;
    if (chars == max_chars) return std::string(text.substr(0, i)) + "…";
    ++chars;
  }
  return std::string(text);
}

}  // namespace porttool::emit
