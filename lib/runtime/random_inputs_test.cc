// Random inputs with value ranges: floats in [lo, hi), integers in [lo, hi] with both bounds
// drawn, the other inputs' values unchanged by a range on one, and a range an element type
// cannot draw from refused naming the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

io::Model RangesModel() {
  return io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[64] x, int64[256] sr, bool[4] flag) => (float[64] y, int64[256] s, bool[4] f) {
      y = Identity(x)
      s = Identity(sr)
      f = Identity(flag) })");
}

TEST(RandomInputRanges, FloatsAndIntegersStayInTheirRange) {
  io::Model model = RangesModel();
  Session session(model);
  TensorMap inputs = RandomInputs(session, 5, {{"x", {-2.0, -1.5}}, {"sr", {8000, 8002}}});
  const Tensor& x = inputs.at("x");
  for (int64_t i = 0; i < x.size(); ++i) {
    EXPECT_GE(x.data<float>()[i], -2.0f);
    EXPECT_LT(x.data<float>()[i], -1.5f);
  }
  std::set<int64_t> drawn;
  const Tensor& sr = inputs.at("sr");
  for (int64_t i = 0; i < sr.size(); ++i) drawn.insert(sr.data<int64_t>()[i]);
  EXPECT_EQ(drawn, (std::set<int64_t>{8000, 8001, 8002}));  // both bounds included
}

TEST(RandomInputRanges, ARangeOnOneInputLeavesTheOthersAsTheyWere) {
  io::Model model = RangesModel();
  Session session(model);
  TensorMap plain = RandomInputs(session, 9);
  TensorMap ranged = RandomInputs(session, 9, {{"sr", {16000, 16000}}, {"not_an_input", {0, 1}}});
  EXPECT_EQ(0, std::memcmp(plain.at("x").raw(), ranged.at("x").raw(), plain.at("x").bytes()));
  EXPECT_EQ(0,
            std::memcmp(plain.at("flag").raw(), ranged.at("flag").raw(), plain.at("flag").bytes()));
  const Tensor& sr = ranged.at("sr");
  for (int64_t i = 0; i < sr.size(); ++i) EXPECT_EQ(sr.data<int64_t>()[i], 16000);
}

TEST(RandomInputRanges, RangesATypeCannotDrawAreUsageErrors) {
  io::Model model = RangesModel();
  Session session(model);
  auto message = [&](const shape::InputRanges& ranges) -> std::string {
    try {
      RandomInputs(session, 1, ranges);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"sr", {0.5, 3}}}).find("input range: 'sr' is int64: expected whole numbers"),
            std::string::npos);
  EXPECT_NE(message({{"flag", {0, 1}}}).find("input range: 'flag' is bool, which takes no range"),
            std::string::npos);
}

}  // namespace
}  // namespace porttool::runtime
