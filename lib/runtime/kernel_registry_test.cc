// The prepare phase and the injectable registry: a caller-supplied kernel runs without touching
// the executor, prepare steps run once at plan time and see constant inputs, and an attribute a
// prepare step rejects fails the Session's construction before anything runs.
#include <gtest/gtest.h>

#include <memory>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::NodeBuilder;
using testing_util::OneNodeModel;

// x + sum(weights) * scale, with the constant weights' sum computed once at prepare.
io::Model ScaledAddModel() {
  onnx::NodeProto node = NodeBuilder("ScaledAdd", 0, 0).Float("scale", 2.0f).node();
  node.set_domain("com.example");
  node.add_input("x");
  node.add_input("w");
  node.add_output("y");
  Tensor x = FloatTensor({2}, {1, 2});
  io::Model model;
  model.proto = OneNodeModel(node, 17, {{"x", x}}, onnx::TensorProto::FLOAT);
  auto* ex = model.proto.add_opset_import();
  ex->set_domain("com.example");
  ex->set_version(1);
  auto* w = model.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) w->add_float_data(v);
  return model;
}

struct ScaledAddState {
  float offset;
};

KernelRegistry WithScaledAdd(int* prepare_calls) {
  KernelRegistry registry = KernelRegistry::Default();
  registry.Register(
      "com.example", "ScaledAdd", 1, 1,
      [](KernelContext& ctx) {
        const auto* state = ctx.prepared<ScaledAddState>();
        ASSERT_NE(state, nullptr);
        const Tensor& x = ctx.input(0);
        Tensor y(x.dtype(), x.shape());
        for (int64_t i = 0; i < x.size(); ++i) {
          y.mutable_data<float>()[i] = x.data<float>()[i] + state->offset;
        }
        ctx.output(0) = std::move(y);
      },
      [prepare_calls](const KernelContext& ctx) -> std::shared_ptr<const void> {
        ++*prepare_calls;
        ctx.AllowAttributes({"scale"});
        if (ctx.has_input(0)) ctx.Fail("x is a runtime input and must read as absent");
        const Tensor& w = ctx.input(1);  // an initializer: present at prepare
        float sum = 0;
        for (int64_t i = 0; i < w.size(); ++i) sum += w.data<float>()[i];
        return std::make_shared<const ScaledAddState>(
            ScaledAddState{sum * ctx.GetFloat("scale", 1.0f)});
      });
  return registry;
}

TEST(KernelRegistry, CallerSuppliedKernelRunsWithPrepareOncePerSession) {
  io::Model model = ScaledAddModel();
  int prepare_calls = 0;
  KernelRegistry registry = WithScaledAdd(&prepare_calls);
  SessionOptions options;
  options.registry = &registry;
  Session session(model, options);
  EXPECT_EQ(prepare_calls, 1);
  for (int run = 0; run < 2; ++run) {
    auto out = session.Run({{"x", FloatTensor({2}, {1, 2})}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].value.data<float>()[0], 13.f);  // 1 + (1+2+3)*2
    EXPECT_FLOAT_EQ(out[0].value.data<float>()[1], 14.f);
  }
  EXPECT_EQ(prepare_calls, 1);
}

TEST(KernelRegistry, DefaultRegistryRejectsTheCustomOpAtPlanTime) {
  io::Model model = ScaledAddModel();
  try {
    Session session(model);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("ScaledAdd"), std::string::npos) << e.what();
  }
}

TEST(KernelRegistry, PrepareRejectsBadAttributeBeforeAnythingRuns) {
  onnx::NodeProto node = NodeBuilder("LSTM", 0, 0)
                             .Int("hidden_size", 2)
                             .Strs("activations", {"Sigmoid", "Tanh", "Gelu"})
                             .node();
  for (const char* in : {"X", "W", "R"}) node.add_input(in);
  node.add_output("Y");
  Tensor x(onnx::TensorProto::FLOAT, {1, 1, 2}), w(onnx::TensorProto::FLOAT, {1, 8, 2}),
      r(onnx::TensorProto::FLOAT, {1, 8, 2});
  io::Model model;
  model.proto = OneNodeModel(node, 14, {{"X", x}, {"W", w}, {"R", r}}, onnx::TensorProto::FLOAT);
  try {
    Session session(model);
    FAIL() << "expected the Session's construction to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'Gelu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("LSTM_under_test"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime
