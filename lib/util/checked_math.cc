#include "lib/util/checked_math.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/util/error.h"

namespace porttool::util {

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> CheckedElementCount(std::span<const int64_t> dims) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    // Keep scanning after an overflow: a later 0 makes the product 0, which is valid.
    if (!overflow) {
      auto r = CheckedMul(n, d);
      overflow = !r.has_value();
      n = r.value_or(0);
    }
  }
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  if (overflow) return std::nullopt;
  return n;
}

std::string DimsToString(std::span<const int64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t ElementCountOf(std::span<const int64_t> dims, std::string_view what) {
  for (int64_t d : dims) {
    if (d < 0) ThrowBadInput("{}: shape {} has a negative dim", what, DimsToString(dims));
  }
  auto n = CheckedElementCount(dims);
  if (!n) ThrowBadInput("{}: shape {} holds more than 2^63 elements", what, DimsToString(dims));
  return *n;
}

int64_t ByteSizeOf(std::span<const int64_t> dims, size_t element_size, std::string_view what) {
  int64_t n = ElementCountOf(dims, what);
  auto bytes = CheckedMul(n, static_cast<int64_t>(element_size));
  if (!bytes) {
    ThrowBadInput("{}: shape {} is more than 2^63 bytes", what, DimsToString(dims));
  }
  return *bytes;
}

}  // namespace porttool::util
