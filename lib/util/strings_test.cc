#include "lib/util/strings.h"

#include <gtest/gtest.h>

#include <limits>

namespace porttool::util {
namespace {

// `run` printed "0.01 ms" for a 12 us model and "0.00 ms" for a 3 us one: three significant
// figures keep what was measured at every scale.
TEST(FormatMs, ThreeSignificantFiguresAtEveryScale) {
  EXPECT_EQ(FormatMs(0.0123456), "0.0123 ms");
  EXPECT_EQ(FormatMs(0.003), "0.00300 ms");
  EXPECT_EQ(FormatMs(1.25), "1.25 ms");
  EXPECT_EQ(FormatMs(42.14), "42.1 ms");
  EXPECT_EQ(FormatMs(1234.4), "1234 ms");
  EXPECT_EQ(FormatMs(0), "0 ms");
  EXPECT_EQ(FormatMs(std::numeric_limits<double>::infinity()), "inf ms");
}

// A port's "left" line once listed all 119 node names of one op (~10 KB): five and a count now.
TEST(JoinFirst, TheFirstFewAndACount) {
  EXPECT_EQ(JoinFirst({}), "");
  EXPECT_EQ(JoinFirst({"a", "b"}), "a, b");
  EXPECT_EQ(JoinFirst({"a", "b", "c", "d", "e"}), "a, b, c, d, e");
  EXPECT_EQ(JoinFirst({"a", "b", "c", "d", "e", "f", "g"}), "a, b, c, d, e and 2 more");
  EXPECT_EQ(JoinFirst({"a", "b", "c"}, 1), "a and 2 more");
}

TEST(Printable, ControlBytesBecomeEscapesAndTheRestStays) {
  EXPECT_EQ(Printable("conv_1/Relu:0 \xc3\xa9"), "conv_1/Relu:0 \xc3\xa9");
  EXPECT_EQ(Printable("a\x1b[2Jb\nc\rd\x7f"), "a\\x1b[2Jb\\x0ac\\x0dd\\x7f");
  EXPECT_EQ(Printable(std::string("nul\0x", 5)), "nul\\x00x");
}

}  // namespace
}  // namespace porttool::util
