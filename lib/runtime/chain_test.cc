#include "lib/runtime/chain.h"

#include <gtest/gtest.h>

#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

// y = Relu(x) + x, cut after the Relu: the second segment reads the bridge r and the input x.
const char* kWhole = R"(<ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] y, float[2,3] r) { r = Relu(x)  y = Add(r, x) })";
const char* kFirst = R"(<ir_version: 8, opset_import: ["" : 17]>
  a (float[2,3] x) => (float[2,3] r) { r = Relu(x) })";
const char* kSecond = R"(<ir_version: 8, opset_import: ["" : 17]>
  b (float[2,3] r, float[2,3] x) => (float[2,3] y) { y = Add(r, x) })";

TEST(ChainSession, ReproducesTheWholeModelInItsOutputOrder) {
  io::Model whole = io::ParseText(kWhole), first = io::ParseText(kFirst),
            second = io::ParseText(kSecond);
  ChainSession chain(whole, {&first, &second});
  ASSERT_EQ(chain.output_names(), (std::vector<std::string>{"y", "r"}));
  Session session(whole);
  TensorMap inputs = RandomInputs(session, 3);
  auto want = session.Run(inputs);
  std::vector<std::string> seen;
  auto got = chain.RunObserved(inputs, [&](const ProducedTensor& p) { seen.push_back(p.name); });
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    for (int64_t k = 0; k < want[i].value.size(); ++k) {
      EXPECT_EQ(got[i].value.data<float>()[k], want[i].value.data<float>()[k]);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"r", "y"}));
}

TEST(ChainSession, AMissingBridgeIsBadInputNamingSegmentAndTensor) {
  io::Model whole = io::ParseText(kWhole), second = io::ParseText(kSecond);
  try {
    ChainSession chain(whole, {&second});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("segment 1 needs 'r'"), std::string::npos) << e.what();
    EXPECT_EQ(e.tensor(), "r");
  }
}

}  // namespace
}  // namespace porttool::runtime
