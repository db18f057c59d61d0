#include "lib/util/checked_math.h"

#include <gtest/gtest.h>

#include "lib/util/error.h"

namespace porttool::util {
namespace {

TEST(CheckedMath, ElementCounts) {
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{}), 1);
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{2, 3, 4}), 24);
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{INT64_MAX}), INT64_MAX);
  // 2^62 * 2^62 * 4 wraps to 0 in 64-bit arithmetic: it must not pass for an empty tensor.
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62, 4}),
            std::nullopt);
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{2, -3}), std::nullopt);
  // A zero anywhere makes the product 0, even after a partial product that overflowed.
  EXPECT_EQ(CheckedElementCount(std::vector<int64_t>{int64_t{1} << 62, 8, 0}), 0);
}

TEST(CheckedMath, ThrowingFormsNameTheCulprit) {
  try {
    ByteSizeOf(std::vector<int64_t>{int64_t{1} << 61, 2}, 4, "tensor 'w'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(std::string(e.what()),
              "tensor 'w': shape [2305843009213693952, 2] is more than 2^63 bytes");
  }
  EXPECT_THROW(ElementCountOf(std::vector<int64_t>{-1}, "x"), Error);
  EXPECT_EQ(ByteSizeOf(std::vector<int64_t>{3, 5}, 8, "x"), 120);
  EXPECT_EQ(CheckedMul(INT64_MAX, 2), std::nullopt);
  EXPECT_EQ(CheckedMul(-1, 2), std::nullopt);
}

}  // namespace
}  // namespace porttool::util
