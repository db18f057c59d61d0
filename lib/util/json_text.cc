#include "lib/util/json_text.h"

namespace porttool::util {

std::string DumpJson(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is malformed (Unicode 15,
// table 3-7: the second byte's range depends on the first byte).
size_t SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n = b0 >= 0xC2 && b0 <= 0xDF   ? 2
             : b0 >= 0xE0 && b0 <= 0xEF ? 3
             : b0 >= 0xF0 && b0 <= 0xF4 ? 4
                                        : 0;
  if (n == 0 || i + n > text.size()) return 0;
  unsigned char lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
  unsigned char hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = SequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace porttool::util
