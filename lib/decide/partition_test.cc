// split --auto's cost model on a small model where the naive partition (every unsupported run on
// the host) leaves a one-node accelerator island between two host nodes.
#include "lib/decide/partition.h"

#include <gtest/gtest.h>

#include "lib/decide/scan.h"
#include "lib/util/testing.h"

namespace porttool::decide {
namespace {

// Two 37.7 M-MAC convolutions (worth the accelerator) around Abs -> Relu -> Abs; RK3588 has no
// Abs kernel, so the Relu alone would be an accelerator island costing two switches and two
// 512 KiB bridges for almost no work.
constexpr const char* kIslandModel = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,32,64,64] x) => (float[1,32,64,64] y) {
  ws = Constant <value = int64[4] {32, 32, 3, 3}> ()
  w = ConstantOfShape (ws)
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w)
  a1 = Abs (c1)
  r = Relu (a1)
  a2 = Abs (r)
  y = Conv <pads = [1, 1, 1, 1]> (a2, w)
})";

struct Planned {
  std::unique_ptr<AnalyzedModel> model;
  TargetProfile target;
  Partition partition;
};

Planned Plan(const PartitionOptions& options) {
  Planned p;
  p.model = std::make_unique<AnalyzedModel>(io::ParseText(kIslandModel), shape::InputShapes{});
  p.target = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  p.partition = PlanPartition(*p.model, HostNodes(*p.model, ScanTarget(*p.model, p.target)),
                              p.target, options);
  return p;
}

TEST(Partition, IslandThatCostsMoreThanItSavesRunsOnTheHost) {
  Planned p = Plan({});
  const PartitionPlan& naive = p.partition.alternatives.at(0);
  ASSERT_EQ(naive.segments.size(), 5u);  // A | H(Abs) | A(Relu) | H(Abs) | A
  const PartitionPlan& chosen = p.partition.chosen;
  ASSERT_EQ(chosen.segments.size(), 3u);
  EXPECT_FALSE(chosen.segments[0].host);
  EXPECT_TRUE(chosen.segments[1].host);
  EXPECT_EQ(chosen.segments[1].nodes, 3);  // Abs, Relu, Abs
  EXPECT_FALSE(chosen.segments[2].host);
  EXPECT_LT(chosen.total_ms, naive.total_ms);
  // The estimate adds up: segment totals, a switch per segment after the first, and the 512 KiB
  // bridge each boundary carries.
  double sum = 0;
  for (const auto& s : chosen.segments) sum += s.total_ms();
  EXPECT_DOUBLE_EQ(sum, chosen.total_ms);
  EXPECT_DOUBLE_EQ(chosen.segments[1].switch_ms, p.partition.costs.switch_ms);
  EXPECT_EQ(chosen.segments[1].bridge_bytes, 32u * 64 * 64 * 4);
  // The convolutions stay on the accelerator: all-on-host is slower than the chosen plan.
  ASSERT_EQ(p.partition.alternatives.size(), 2u);
  EXPECT_EQ(p.partition.alternatives[1].segments.size(), 1u);
  EXPECT_LT(chosen.total_ms, p.partition.alternatives[1].total_ms);
}

TEST(Partition, MaxSegmentsAndMinSegmentNodesBoundTheResult) {
  Planned one = Plan({1, 1});
  EXPECT_EQ(one.partition.chosen.segments.size(), 1u);
  EXPECT_TRUE(one.partition.chosen.segments[0].host);
  // Accelerator segments of fewer than 4 nodes move: the first (Constant, ConstantOfShape, Conv)
  // and the last (Conv) both do.
  Planned big = Plan({4, 0});
  EXPECT_EQ(big.partition.chosen.segments.size(), 1u);
  nlohmann::json j = PartitionToJson(big.partition);
  EXPECT_EQ(j["chosen"]["segments"], 1);
  EXPECT_EQ(j["alternatives"].size(), 2u);
  EXPECT_NE(PartitionToText(big.partition).find("alternatives considered"), std::string::npos);
}

// A small accelerator segment before a CPU-only tail (rknn-rk3588 has no GreaterOrEqual or Cast on
// its NPU): on the profile's assumed figures the host alone is cheaper, but the estimate never
// sends the whole model to the host (issue 48: hey_jarvis went "host only" this way).
TEST(Partition, TheLastAcceleratorSegmentStaysUnlessTheUserBoundsMoveIt) {
  auto model =
      std::make_unique<AnalyzedModel>(io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x) => (float[1,8] y) {
  s = Sigmoid (x)
  r = Relu (s)
  half = Constant <value = float {0.5}> ()
  b = GreaterOrEqual (r, half)
  y = Cast <to = 1> (b)
})"),
                                      shape::InputShapes{});
  TargetProfile rk3588 = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  std::vector<bool> forced = HostNodes(*model, ScanTarget(*model, rk3588));
  Partition p = PlanPartition(*model, forced, rk3588, {});
  const PartitionPlan& all_host = p.alternatives.back();
  ASSERT_EQ(all_host.name, "all on the host");
  EXPECT_LT(all_host.total_ms, p.chosen.total_ms);  // the estimate prefers the host...
  ASSERT_EQ(p.chosen.segments.size(), 2u);          // ...and the accelerator is kept
  EXPECT_FALSE(p.chosen.segments[0].host);
  EXPECT_TRUE(p.chosen.segments[1].host);
  // --max-segments 1 is the user's own bound: it still moves it.
  Partition one = PlanPartition(*model, forced, rk3588, {1, 1});
  ASSERT_EQ(one.chosen.segments.size(), 1u);
  EXPECT_TRUE(one.chosen.segments[0].host);
}

}  // namespace
}  // namespace porttool::decide
