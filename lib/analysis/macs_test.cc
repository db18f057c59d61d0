#include "lib/analysis/macs.h"

#include <gtest/gtest.h>

#include <map>

namespace porttool::analysis {
namespace {

onnx::NodeProto Node(const std::string& op, std::vector<std::string> in, std::string out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (auto& i : in) n.add_input(i);
  n.add_output(out);
  return n;
}

ShapeLookup Shapes(std::map<std::string, std::vector<int64_t>> shapes) {
  return [shapes](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto it = shapes.find(name);
    if (it == shapes.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Macs, ConvCountsOutputTimesInputChannelsTimesKernel) {
  auto shapes = Shapes({{"x", {1, 3, 8, 8}}, {"w", {16, 3, 3, 3}}, {"y", {1, 16, 8, 8}}});
  EXPECT_EQ(NodeMacs(Node("Conv", {"x", "w"}, "y"), shapes), uint64_t{16 * 64 * 27});
}

TEST(Macs, GroupedConvUsesChannelsPerGroup) {
  // Depthwise: weights [C, 1, k, k].
  auto shapes = Shapes({{"x", {1, 8, 4, 4}}, {"w", {8, 1, 3, 3}}, {"y", {1, 8, 4, 4}}});
  EXPECT_EQ(NodeMacs(Node("Conv", {"x", "w"}, "y"), shapes), uint64_t{8 * 16 * 9});
}

TEST(Macs, ConvTransposeCountsInputTimesOutputChannelsTimesKernel) {
  auto shapes = Shapes({{"x", {1, 4, 5, 5}}, {"w", {4, 2, 3, 3}}, {"y", {1, 2, 11, 11}}});
  EXPECT_EQ(NodeMacs(Node("ConvTranspose", {"x", "w"}, "y"), shapes), uint64_t{100 * 2 * 9});
}

TEST(Macs, MatMulAndGemm) {
  auto shapes = Shapes({{"a", {2, 3, 4}},
                        {"b", {4, 5}},
                        {"y", {2, 3, 5}},
                        {"ga", {5, 4}},
                        {"gb", {5, 6}},
                        {"gy", {4, 6}}});
  EXPECT_EQ(NodeMacs(Node("MatMul", {"a", "b"}, "y"), shapes), uint64_t{30 * 4});
  onnx::NodeProto gemm = Node("Gemm", {"ga", "gb"}, "gy");
  auto* attr = gemm.add_attribute();
  attr->set_name("transA");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(1);
  EXPECT_EQ(NodeMacs(gemm, shapes), uint64_t{24 * 5});
}

TEST(Macs, UnknownShapeOrUncountedOpGivesNothing) {
  auto shapes = Shapes({{"x", {1, 3, 8, 8}}});
  EXPECT_FALSE(NodeMacs(Node("Conv", {"x", "w"}, "y"), shapes));
  EXPECT_FALSE(NodeMacs(Node("Relu", {"x"}, "y"), shapes));
  auto dynamic = Shapes({{"x", {-1, 3, 8, 8}}, {"w", {16, 3, 3, 3}}, {"y", {-1, 16, 8, 8}}});
  EXPECT_FALSE(NodeMacs(Node("Conv", {"x", "w"}, "y"), dynamic));
}

}  // namespace
}  // namespace porttool::analysis
