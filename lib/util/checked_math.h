// Checked arithmetic for sizes that come from model data. Dims, repeat counts, scales and header
// fields are chosen by whoever wrote the file, so every element count and byte size goes through
// these helpers instead of a raw product: a negative dim or a product past int64 is reported as
// bad input naming the culprit, never wrapped into a small number that passes a later size check
// (signed overflow is undefined behaviour besides).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::util {

// Product of `dims`, or nullopt when a dim is negative or the product exceeds INT64_MAX.
std::optional<int64_t> CheckedElementCount(std::span<const int64_t> dims);
// a * b, or nullopt when either is negative or the product exceeds INT64_MAX.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);

// Throwing forms: Error(kBadInput) "WHAT: shape [d0, d1, ...] has a negative dim" or "...
// holds more than 2^63 elements". `what` names the tensor (and file or node).
int64_t ElementCountOf(std::span<const int64_t> dims, std::string_view what);
// Bytes of `dims` elements of `element_size` bytes each, with the same checks.
int64_t ByteSizeOf(std::span<const int64_t> dims, size_t element_size, std::string_view what);

// "[1, 3, 640, 640]".
std::string DimsToString(std::span<const int64_t> dims);

}  // namespace porttool::util
