#include "lib/util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace porttool::util {

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.emplace_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

std::string ReplaceAll(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) return text;
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> ClosestNames(std::string_view name, const std::vector<std::string>& pool,
                                      size_t limit) {
  // A suggestion far from what was typed is noise ("bogus" -> "stm32f767"): keep only names
  // that contain it, or are within about a third of its length in edits.
  size_t max_edits = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& candidate : pool) {
    bool contains =
        !name.empty() && (candidate.find(name) != std::string::npos ||
                          (!candidate.empty() && name.find(candidate) != std::string::npos));
    size_t distance = contains ? 0 : EditDistance(name, candidate);
    if (contains || (!name.empty() && distance <= max_edits)) {
      scored.emplace_back(contains ? 0 : 1 + distance, candidate);
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < limit; ++i) out.push_back(scored[i].second);
  return out;
}

std::string GroupDigits(uint64_t count) {
  std::string digits = std::to_string(count);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, kUnits[unit]);
}

std::string JoinFirst(const std::vector<std::string>& parts, size_t shown) {
  if (parts.size() <= shown) return Join(parts, ", ");
  std::vector<std::string> first(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(shown));
  return fmt::format("{} and {} more", Join(first, ", "), parts.size() - shown);
}

std::string FormatMs(double ms) {
  if (!std::isfinite(ms) || ms <= 0) return fmt::format("{:g} ms", ms);
  const int integer_digits = static_cast<int>(std::floor(std::log10(ms))) + 1;
  const int decimals = std::max(0, 3 - integer_digits);
  return fmt::format("{:.{}f} ms", ms, decimals);
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace porttool::util
