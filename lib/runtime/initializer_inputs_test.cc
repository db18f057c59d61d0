// A value given for an initializer that the model also lists as a graph input replaces it; not
// given, the initializer is used (never a missing-input error, never random data).
#include "lib/runtime/initializer_inputs.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/ir/initializer_inputs.h"

namespace porttool::runtime {
namespace {

// IR 4 as PyTorch 1.2 wrote it: the weight `w` is an initializer and a graph input.
io::Model WeightAlsoAnInput() {
  return io::ParseText(R"(<ir_version: 4, opset_import: ["" : 9]>
    g (float[2] x, float[2] w) => (float[2] y) <float[2] w = {1.0, 2.0}> {
      y = Add(x, w)
    })");
}

Tensor Floats(std::vector<float> values) {
  Tensor t(onnx::TensorProto::FLOAT, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<float>()[i] = values[i];
  return t;
}

std::vector<float> Output(const io::Model& model, const TensorMap& inputs) {
  Session session(model, {});
  auto out = session.Run(inputs);
  const Tensor& y = out.at(0).value;
  return {y.data<float>(), y.data<float>() + y.size()};
}

TEST(InitializerInputs, NotGivenTheInitializerIsUsed) {
  io::Model model = WeightAlsoAnInput();
  EXPECT_EQ(ir::InitializerInputs(model.proto.graph()), std::vector<std::string>{"w"});
  TensorMap inputs = {{"x", Floats({10, 20})}};
  EXPECT_TRUE(FeedInitializerInputs(model, inputs).empty());
  EXPECT_EQ(Output(model, inputs), (std::vector<float>{11, 22}));
}

TEST(InitializerInputs, GivenTheCallersValueWins) {
  io::Model model = WeightAlsoAnInput();
  TensorMap inputs = {{"x", Floats({10, 20})}, {"w", Floats({5, 5})}};
  std::vector<std::string> fed = FeedInitializerInputs(model, inputs);
  EXPECT_EQ(fed, std::vector<std::string>{"w"});
  EXPECT_EQ(Output(model, inputs), (std::vector<float>{15, 25}));
  EXPECT_NE(FedInitializersNote(fed).find("replace initializer(s) the model also lists as graph "
                                          "inputs: w"),
            std::string::npos)
      << FedInitializersNote(fed);
}

TEST(InitializerInputs, DroppingThemFromTheInputsKeepsTheInitializers) {
  io::Model model = WeightAlsoAnInput();
  EXPECT_EQ(ir::DropInitializerInputs(*model.proto.mutable_graph()), std::vector<std::string>{"w"});
  ASSERT_EQ(model.proto.graph().input_size(), 1);
  EXPECT_EQ(model.proto.graph().input(0).name(), "x");
  EXPECT_EQ(model.proto.graph().initializer_size(), 1);
  EXPECT_EQ(Output(model, {{"x", Floats({10, 20})}}), (std::vector<float>{11, 22}));
}

}  // namespace
}  // namespace porttool::runtime
