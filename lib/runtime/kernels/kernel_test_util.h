// Test helpers for the kernel suites: build a NodeProto in a line, run one kernel from the
// default registry outside a Session, and make random tensors. Test-only; included by *_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime::testing_util {

class NodeBuilder {
 public:
  NodeBuilder(const std::string& op, int inputs, int outputs = 1) {
    node_.set_op_type(op);
    node_.set_name(op + "_under_test");
    for (int i = 0; i < inputs; ++i) node_.add_input("in" + std::to_string(i));
    for (int i = 0; i < outputs; ++i) node_.add_output("out" + std::to_string(i));
  }
  NodeBuilder& Int(const std::string& name, int64_t v) {
    auto* a = Add(name, onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  NodeBuilder& Float(const std::string& name, float v) {
    auto* a = Add(name, onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *this;
  }
  NodeBuilder& Str(const std::string& name, const std::string& v) {
    auto* a = Add(name, onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  NodeBuilder& Ints(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = Add(name, onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  NodeBuilder& Floats(const std::string& name, const std::vector<float>& v) {
    auto* a = Add(name, onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
    return *this;
  }
  NodeBuilder& Strs(const std::string& name, const std::vector<std::string>& v) {
    auto* a = Add(name, onnx::AttributeProto::STRINGS);
    for (const auto& x : v) a->add_strings(x);
    return *this;
  }
  // Marks output i as not wanted (empty name).
  NodeBuilder& DropOutput(int i) {
    node_.set_output(i, "");
    return *this;
  }
  const onnx::NodeProto& node() const { return node_; }

 private:
  onnx::AttributeProto* Add(const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* a = node_.add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  onnx::NodeProto node_;
};

// Runs the registered kernel for the node at `opset`; nullptr inputs are absent optional inputs.
inline std::vector<Tensor> RunOp(const onnx::NodeProto& node, int opset,
                                 std::vector<const Tensor*> inputs) {
  const KernelFn* fn = KernelRegistry::Default().Find("", node.op_type(), opset);
  if (fn == nullptr) throw std::runtime_error("no kernel for " + node.op_type());
  KernelContext ctx(node, opset, std::move(inputs));
  (*fn)(ctx);
  return std::move(ctx.outputs());
}

// Like RunOp, with the kernel's prepare step run first, seeing the inputs marked `constant` (as
// the Session shows it the initializers); returns the outputs and whether the step built
// anything.
inline std::vector<Tensor> RunOpPrepared(const onnx::NodeProto& node, int opset,
                                         std::vector<const Tensor*> inputs,
                                         const std::vector<bool>& constant, bool* prepared_some) {
  const KernelRegistry& registry = KernelRegistry::Default();
  const KernelFn* fn = registry.Find("", node.op_type(), opset);
  if (fn == nullptr) throw std::runtime_error("no kernel for " + node.op_type());
  std::shared_ptr<const void> prepared;
  if (const PrepareFn* prepare = registry.FindPrepare("", node.op_type(), opset)) {
    std::vector<const Tensor*> constants;
    for (size_t i = 0; i < inputs.size(); ++i)
      constants.push_back(i < constant.size() && constant[i] ? inputs[i] : nullptr);
    prepared = (*prepare)(KernelContext(node, opset, constants));
  }
  if (prepared_some) *prepared_some = prepared != nullptr;
  KernelContext ctx(node, opset, std::move(inputs));
  ctx.set_prepared(prepared);
  (*fn)(ctx);
  return std::move(ctx.outputs());
}

inline Tensor FloatTensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  Tensor t(onnx::TensorProto::FLOAT, shape);
  std::copy(values.begin(), values.end(), t.mutable_data<float>());
  return t;
}

inline Tensor RandomFloats(const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor t(onnx::TensorProto::FLOAT, shape);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = dist(rng);
  return t;
}

inline Tensor Int64Tensor(const std::vector<int64_t>& shape, const std::vector<int64_t>& values) {
  Tensor t(onnx::TensorProto::INT64, shape);
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return t;
}

// Relative-to-magnitude comparison suited to float32 accumulation order differences.
inline void ExpectClose(const Tensor& actual, const std::vector<int64_t>& shape,
                        const std::vector<float>& expected, const std::string& what,
                        double tol = 1e-4) {
  ASSERT_EQ(actual.shape(), shape) << what;
  ASSERT_EQ(static_cast<size_t>(actual.size()), expected.size()) << what;
  const float* a = actual.data<float>();
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(a[i], expected[i], tol * (1 + std::abs(expected[i]))) << what << " element " << i;
  }
}

}  // namespace porttool::runtime::testing_util
