// Zero-size tensors through every kernel (issue 54): a 0 dim used to reach a division in the
// broadcast plan (SIGFPE) and killed every subcommand. The matrix is generated: for each op of
// the executor's own registry, a one-node model per input and per dim position with that dim 0
// (binary elementwise ops: every broadcast pairing of a 0 dim), run in a Session. Each run must
// either succeed with the output shapes ONNX's shape inference gives (python onnx, the oracle)
// and porttool's own (lib/shape), or fail with Error(kBadInput); a crash, an internal error or a
// wrong shape fails the test, and so does a refusal of a case whose inputs agree (kMayRefuse
// lists the ops allowed one, with why). Multi-input cases run again with the weights constant,
// through the kernels' prepare steps. An op with no recipe below fails the test too, so a new
// kernel cannot skip the matrix. The last test checks the values of empty-input kernels whose
// output is not empty (reductions, Concat, Pad, ...) against ONNX Runtime.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "lib/io/model.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/infer.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using TP = onnx::TensorProto;
using Shape = std::vector<int64_t>;

// One input of a recipe: a data input (a graph input the matrix gives 0 dims), a constant (an
// initializer such as a shape, axes, pads or a scale, never zeroed) or an absent optional one.
struct In {
  Shape shape;
  int32_t dtype = TP::FLOAT;
  bool constant = false;
  bool absent = false;
  std::vector<double> values;  // a constant's values
};

In D(int32_t dtype, Shape s) {
  In in;
  in.shape = std::move(s);
  in.dtype = dtype;
  return in;
}
In F(Shape s) { return D(TP::FLOAT, std::move(s)); }
In Const(int32_t dtype, Shape s, std::vector<double> v) {
  In in = D(dtype, std::move(s));
  in.constant = true;
  in.values = std::move(v);
  return in;
}
In Ints(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Const(TP::INT64, {n}, std::move(v));
}
In IntScalar(double v) { return Const(TP::INT64, {}, {v}); }
In Absent() {
  In in;
  in.absent = true;
  return in;
}

struct Recipe {
  int opset = 13;
  std::vector<In> inputs;
  onnx::NodeProto attrs;  // only its attributes are used
  int outputs = 1;
  // Shapes of the data inputs, one set per case, instead of the generated "one dim 0" cases
  // (binary ops: the broadcast pairings).
  std::vector<std::vector<Shape>> cases;
  // Cases added to the generated ones whose inputs agree (a 0 batch in X and no other change):
  // they must run where ONNX gives a valid shape.
  std::vector<std::vector<Shape>> agreeing = {};
};

NodeBuilder A() { return NodeBuilder("", 0, 0); }

Recipe R(int opset, std::vector<In> inputs, const NodeBuilder& attrs = A(), int outputs = 1) {
  Recipe r;
  r.opset = opset;
  r.inputs = std::move(inputs);
  r.attrs = attrs.node();
  r.outputs = outputs;
  return r;
}

// Every pairing of a 0 dim a binary (or variadic) elementwise op meets: 0 against 1, 0 against
// 0, against a scalar and a missing leading dim, and 0 produced by broadcasting a 1.
std::vector<std::vector<Shape>> BinaryPairings() {
  return {{{0}, {1}},
          {{1}, {0}},
          {{0}, {0}},
          {{0}, {}},
          {{}, {0}},
          {{0, 3, 4}, {1, 3, 1}},
          {{1, 3, 1}, {0, 3, 4}},
          {{0, 3, 4}, {4}},
          {{0, 3, 4}, {3, 4}},
          {{2, 0, 4}, {0, 4}},
          {{2, 0, 4}, {1, 4}},
          {{3, 0}, {3, 1}},
          {{0, 1}, {1, 5}},
          {{1, 0}, {5, 1}},
          {{0, 3, 4}, {0, 3, 4}},
          {{2, 3, 0}, {2, 3, 0}}};
}

Recipe Binary(int32_t dtype, int opset = 13, const NodeBuilder& attrs = A()) {
  Recipe r = R(opset, {D(dtype, {2, 3}), D(dtype, {2, 3})}, attrs);
  r.cases = BinaryPairings();
  return r;
}

Recipe Unary(int opset = 13, int32_t dtype = TP::FLOAT, const NodeBuilder& attrs = A()) {
  return R(opset, {D(dtype, {2, 3, 4})}, attrs);
}

// A graph value declared float with unknown shape (a body's input or output).
void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values,
              const std::string& name, int32_t dtype) {
  auto* vi = values->Add();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
}

void AddBodyNode(onnx::GraphProto& body, const std::string& op, std::vector<std::string> inputs,
                 const std::string& output) {
  auto* n = body.add_node();
  n->set_op_type(op);
  for (auto& in : inputs) n->add_input(in);
  n->add_output(output);
}

// Loop over v: the body passes the condition on and adds v to itself; two iterations.
Recipe LoopRecipe() {
  Recipe r = R(16, {IntScalar(2), Absent(), F({2, 3})});
  auto* attr = r.attrs.add_attribute();
  attr->set_name("body");
  attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *attr->mutable_g();
  body.set_name("loop_body");
  AddValue(body.mutable_input(), "i", TP::INT64);
  AddValue(body.mutable_input(), "c", TP::BOOL);
  AddValue(body.mutable_input(), "v", TP::FLOAT);
  AddBodyNode(body, "Identity", {"c"}, "c_out");
  AddBodyNode(body, "Add", {"v", "v"}, "v_out");
  AddValue(body.mutable_output(), "c_out", TP::BOOL);
  AddValue(body.mutable_output(), "v_out", TP::FLOAT);
  return r;
}

// Scan of x's rows into a running sum s, each row also a scan output: a 0-row x runs the body
// no times (s stays its initial value, the scan output has 0 rows).
Recipe ScanRecipe() {
  Recipe r = R(16, {F({3}), F({4, 3})}, A().Int("num_scan_inputs", 1), 2);
  auto* attr = r.attrs.add_attribute();
  attr->set_name("body");
  attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *attr->mutable_g();
  body.set_name("scan_body");
  AddValue(body.mutable_input(), "s", TP::FLOAT);
  AddValue(body.mutable_input(), "x", TP::FLOAT);
  AddBodyNode(body, "Add", {"s", "x"}, "s_out");
  AddBodyNode(body, "Identity", {"x"}, "y");
  AddValue(body.mutable_output(), "s_out", TP::FLOAT);
  AddValue(body.mutable_output(), "y", TP::FLOAT);
  r.agreeing = {{{3}, {0, 3}}, {{0}, {4, 0}}};
  return r;
}

// Empty inputs that agree with each other, for the ops with several data inputs: a 0 batch, 0
// output channels or features, a 0 inner (reduced) dim. ONNX gives each a valid shape, so they
// must run.
void AddAgreeingCases(std::map<std::string, Recipe>& r) {
  auto agree = [&](const std::string& op, std::vector<std::vector<Shape>> cases) {
    r.at("ai.onnx::" + op).agreeing = std::move(cases);
  };
  agree("Conv", {{{0, 2, 5, 5}, {3, 2, 3, 3}, {3}},
                 {{1, 2, 5, 5}, {0, 2, 3, 3}, {0}},
                 {{1, 0, 5, 5}, {3, 0, 3, 3}, {3}},
                 {{1, 2, 0, 5}, {3, 2, 3, 3}, {3}}});
  agree("ConvTranspose", {{{0, 2, 5, 5}, {2, 3, 3, 3}, {3}}, {{1, 2, 5, 5}, {2, 0, 3, 3}, {0}}});
  agree("ConvInteger", {{{0, 2, 4, 4}, {3, 2, 3, 3}}, {{1, 2, 4, 4}, {0, 2, 3, 3}}});
  agree("QLinearConv", {{{0, 2, 4, 4}, {3, 2, 3, 3}}, {{1, 2, 4, 4}, {0, 2, 3, 3}}});
  agree("MatMul",
        {{{2, 0, 4}, {4, 5}}, {{2, 3, 0}, {0, 5}}, {{2, 3, 4}, {4, 0}}, {{0, 3, 4}, {4, 5}}});
  agree("MatMulInteger", {{{0, 3}, {3, 4}}, {{2, 0}, {0, 4}}, {{2, 3}, {3, 0}}});
  agree("QLinearMatMul", {{{0, 3}, {3, 4}}, {{2, 0}, {0, 4}}, {{2, 3}, {3, 0}}});
  agree("Gemm", {{{0, 4}, {4, 5}, {5}}, {{3, 0}, {0, 5}, {5}}, {{3, 4}, {4, 0}, {0}}});
  agree("Einsum", {{{0, 3}, {3, 4}}, {{2, 0}, {0, 4}}, {{2, 3}, {3, 0}}});
  agree("BatchNormalization", {{{0, 3, 4}, {3}, {3}, {3}, {3}}, {{2, 0, 4}, {0}, {0}, {0}, {0}}});
  agree("InstanceNormalization", {{{0, 3, 4}, {3}, {3}}, {{2, 0, 4}, {0}, {0}}});
  agree("LayerNormalization", {{{0, 3, 4}, {4}, {4}}, {{2, 3, 0}, {0}, {0}}});
  agree("GridSample", {{{0, 2, 4, 4}, {0, 3, 3, 2}}, {{1, 2, 4, 4}, {1, 0, 3, 2}}});
  agree("RoiAlign", {{{1, 2, 4, 4}, {0, 4}, {0}}, {{1, 0, 4, 4}, {3, 4}, {3}}});
  agree("RNN", {{{2, 0, 4}, {1, 5, 4}, {1, 5, 5}}, {{0, 3, 4}, {1, 5, 4}, {1, 5, 5}}});
  agree("GRU", {{{2, 0, 4}, {1, 15, 4}, {1, 15, 5}}, {{0, 3, 4}, {1, 15, 4}, {1, 15, 5}}});
  agree("LSTM", {{{2, 0, 4}, {1, 20, 4}, {1, 20, 5}}, {{0, 3, 4}, {1, 20, 4}, {1, 20, 5}}});
  agree("Gather", {{{3, 4}, {0}}, {{3, 0}, {2}}});
  agree("GatherElements", {{{3, 4}, {3, 0}}, {{0, 4}, {0, 4}}});
  agree("GatherND", {{{3, 4}, {0, 1}}});
  agree("ScatterElements", {{{3, 4}, {3, 0}, {3, 0}}, {{0, 4}, {0, 4}, {0, 4}}});
  agree("Scatter", {{{3, 4}, {3, 0}, {3, 0}}});
  agree("ScatterND", {{{3, 4}, {0, 1}, {0, 4}}, {{3, 0}, {2, 1}, {2, 0}}});
  agree("Compress", {{{0, 4}, {0}}, {{3, 0}, {3}}});
  agree("ReverseSequence", {{{4, 0, 3}, {0}}, {{0, 2, 3}, {2}}});
  agree("MaxUnpool", {{{0, 2, 2, 2}, {0, 2, 2, 2}}, {{1, 0, 2, 2}, {1, 0, 2, 2}}});
  agree("CastLike", {{{0, 3}, {1}}});
}

// The recipes, by "domain::op" as KernelRegistry::OpNames spells it.
std::map<std::string, Recipe> Recipes() {
  std::map<std::string, Recipe> r;
  auto onnx = [&](const std::string& op, Recipe recipe) {
    r["ai.onnx::" + op] = std::move(recipe);
  };
  for (const char* op :
       {"Abs",   "Acos",       "Acosh",       "Asin",      "Asinh",   "Atan",   "Atanh",
        "Ceil",  "Cos",        "Cosh",        "Erf",       "Exp",     "Floor",  "Log",
        "Neg",   "Reciprocal", "Relu",        "Round",     "Sigmoid", "Sign",   "Sin",
        "Sinh",  "Softplus",   "Softsign",    "Sqrt",      "Tan",     "Tanh",   "Identity",
        "IsNaN", "Elu",        "HardSigmoid", "LeakyRelu", "Selu",    "Shrink", "ThresholdedRelu",
        "Celu",  "Softmax",    "LogSoftmax",  "Hardmax",   "Dropout"}) {
    onnx(op, Unary());
  }
  onnx("HardSwish", Unary(14));
  onnx("IsInf", Unary(10));
  onnx("Not", Unary(13, TP::BOOL));
  onnx("Gelu", Unary(20));
  onnx("Mish", Unary(18));
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal",
                         "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    onnx(op, Binary(TP::FLOAT, 13));
  }
  onnx("Mod", Binary(TP::FLOAT, 13, A().Int("fmod", 1)));
  {
    // The slope broadcasts to X one way (ONNX's inference gives X's shape; the kernel, like ONNX
    // Runtime, broadcasts both ways): the pairings whose slope fits X.
    Recipe prelu = Binary(TP::FLOAT, 16);
    prelu.cases = {{{0}, {1}},
                   {{0}, {0}},
                   {{0}, {}},
                   {{0, 3, 4}, {1, 3, 1}},
                   {{0, 3, 4}, {4}},
                   {{2, 0, 4}, {0, 4}},
                   {{2, 0, 4}, {1, 4}},
                   {{3, 0}, {3, 1}},
                   {{2, 3, 0}, {2, 3, 0}}};
    onnx("PRelu", prelu);
  }
  for (const char* op : {"And", "Or", "Xor"}) onnx(op, Binary(TP::BOOL));
  onnx("BitShift", Binary(TP::UINT32, 11, A().Str("direction", "LEFT")));
  {
    Recipe where = R(16, {D(TP::BOOL, {2, 3}), F({2, 3}), F({2, 3})});
    for (const auto& c : BinaryPairings()) where.cases.push_back({c[0], c[1], c[0]});
    onnx("Where", where);
  }
  onnx("Clip", R(13, {F({2, 3, 4}), Const(TP::FLOAT, {}, {-1}), Const(TP::FLOAT, {}, {1})}));
  onnx("Cast", Unary(13, TP::FLOAT, A().Int("to", TP::INT32)));
  onnx("CastLike", R(15, {F({2, 3}), D(TP::INT32, {1})}));
  for (const char* op : {"ReduceSum"}) {
    onnx(op, R(13, {F({2, 3, 4}), Ints({1})}, A().Int("keepdims", 1)));
  }
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1",
                         "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    onnx(op, Unary(13, TP::FLOAT, A().Ints("axes", {1}).Int("keepdims", 1)));
  }
  onnx("ArgMax", Unary(13, TP::FLOAT, A().Int("axis", 1)));
  onnx("ArgMin", Unary(13, TP::FLOAT, A().Int("axis", 1)));
  onnx("CumSum", R(14, {F({2, 3, 4}), IntScalar(1)}));
  onnx("TopK", R(11, {F({2, 3, 4}), Ints({0})}, A().Int("axis", 1), 2));
  onnx("Concat", R(13, {F({2, 3}), F({2, 3})}, A().Int("axis", 0)));
  onnx("Split", R(13, {F({2, 4, 3})}, A().Int("axis", 0), 2));
  onnx("Flatten", Unary(13, TP::FLOAT, A().Int("axis", 1)));
  onnx("Reshape", R(14, {F({2, 3, 4}), Ints({-1, 4})}));
  onnx("Squeeze", R(13, {F({2, 1, 3}), Ints({1})}));
  onnx("Unsqueeze", R(13, {F({2, 3}), Ints({1})}));
  onnx("Transpose", Unary(13, TP::FLOAT, A().Ints("perm", {2, 0, 1})));
  onnx("Shape", Unary(15));
  onnx("Size", Unary(13));
  onnx("Expand", R(13, {F({3, 1}), Ints({2, 3, 4})}));
  onnx("Tile", R(13, {F({2, 3}), Ints({2, 1})}));
  onnx("Slice", R(13, {F({2, 3, 4}), Ints({0}), Ints({2}), Ints({1}), Ints({1})}));
  onnx("Pad", R(13, {F({2, 3, 4}), Ints({0, 1, 1, 0, 1, 1})}));
  onnx("ConstantOfShape", R(13, {Ints({2, 0})}));
  {
    Recipe constant = R(13, {});
    auto* value = constant.attrs.add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(TP::FLOAT);
    for (int64_t d : {0, 3}) value->mutable_t()->add_dims(d);
    onnx("Constant", constant);
  }
  onnx("EyeLike", R(9, {F({3, 4})}));
  onnx("Range",
       R(11, {Const(TP::FLOAT, {}, {0}), Const(TP::FLOAT, {}, {0}), Const(TP::FLOAT, {}, {1})}));
  onnx("NonZero", Unary(13));
  onnx("Trilu", R(14, {F({2, 3, 4})}));
  onnx("Gather", R(13, {F({3, 4}), D(TP::INT64, {2})}, A().Int("axis", 0)));
  onnx("GatherElements", R(13, {F({3, 4}), D(TP::INT64, {3, 4})}, A().Int("axis", 1)));
  onnx("GatherND", R(13, {F({3, 4}), D(TP::INT64, {2, 1})}));
  onnx("ScatterElements", R(16, {F({3, 4}), D(TP::INT64, {3, 4}), F({3, 4})}));
  onnx("ScatterND", R(16, {F({3, 4}), D(TP::INT64, {2, 1}), F({2, 4})}));
  onnx("Scatter", R(9, {F({3, 4}), D(TP::INT64, {3, 4}), F({3, 4})}));
  onnx("Compress", R(11, {F({3, 4}), D(TP::BOOL, {3})}, A().Int("axis", 0)));
  onnx("OneHot", R(11, {D(TP::INT64, {2, 3}), IntScalar(4), Const(TP::FLOAT, {2}, {0, 1})}));
  onnx("Unique", R(11, {F({2, 3})}, A().Int("axis", 0), 4));
  onnx("ReverseSequence", R(10, {F({4, 2, 3}), D(TP::INT64, {2})}));
  onnx("DepthToSpace", Unary(13, TP::FLOAT, A().Int("blocksize", 2)));
  onnx("SpaceToDepth", Unary(13, TP::FLOAT, A().Int("blocksize", 2)));
  onnx("MatMul", R(13, {F({2, 3, 4}), F({4, 5})}));
  onnx("Gemm", R(13, {F({3, 4}), F({4, 5}), F({5})}));
  onnx("Einsum", R(12, {F({2, 3}), F({3, 4})}, A().Str("equation", "ij,jk->ik")));
  onnx("Det", Unary(11));
  onnx("Conv", R(11, {F({1, 2, 5, 5}), F({3, 2, 3, 3}), F({3})}, A().Ints("pads", {1, 1, 1, 1})));
  onnx("ConvTranspose", R(11, {F({1, 2, 5, 5}), F({2, 3, 3, 3}), F({3})}));
  for (const char* op : {"MaxPool", "AveragePool"}) {
    onnx(op, R(11, {F({1, 2, 5, 5})}, A().Ints("kernel_shape", {2, 2})));
  }
  onnx("LpPool", R(11, {F({1, 2, 5, 5})}, A().Ints("kernel_shape", {2, 2})));
  onnx("GlobalAveragePool", R(11, {F({1, 2, 5, 5})}));
  onnx("GlobalMaxPool", R(11, {F({1, 2, 5, 5})}));
  onnx("GlobalLpPool", R(11, {F({1, 2, 5, 5})}));
  onnx("MaxUnpool", R(11, {F({1, 2, 2, 2}), D(TP::INT64, {1, 2, 2, 2})},
                      A().Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2})));
  onnx("LRN", R(13, {F({1, 3, 4, 4})}, A().Int("size", 3)));
  onnx("BatchNormalization", R(15, {F({2, 3, 4}), F({3}), F({3}), F({3}), F({3})}));
  onnx("InstanceNormalization", R(6, {F({2, 3, 4}), F({3}), F({3})}));
  onnx("LayerNormalization", R(17, {F({2, 3, 4}), F({4}), F({4})}));
  onnx("MeanVarianceNormalization", R(13, {F({2, 3, 4, 5})}));
  onnx("Resize", R(13, {F({1, 2, 3, 4}), Absent(), Const(TP::FLOAT, {4}, {1, 1, 2, 2})}));
  onnx("Upsample", R(9, {F({1, 2, 3, 4}), Const(TP::FLOAT, {4}, {1, 1, 2, 2})}));
  onnx("GridSample", R(16, {F({1, 2, 4, 4}), F({1, 3, 3, 2})}));
  onnx("RoiAlign", R(16, {F({1, 2, 4, 4}), F({3, 4}), D(TP::INT64, {3})}));
  onnx("NonMaxSuppression", R(11, {F({1, 4, 4}), F({1, 1, 4})}));
  onnx("QuantizeLinear",
       R(13, {F({2, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  onnx("DequantizeLinear",
       R(13, {D(TP::UINT8, {2, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  onnx("DynamicQuantizeLinear", R(11, {F({2, 3})}, A(), 3));
  onnx("MatMulInteger", R(10, {D(TP::UINT8, {2, 3}), D(TP::UINT8, {3, 4})}));
  onnx("ConvInteger", R(10, {D(TP::UINT8, {1, 2, 4, 4}), D(TP::UINT8, {3, 2, 3, 3})}));
  onnx("QLinearMatMul",
       R(10, {D(TP::UINT8, {2, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128}),
              D(TP::UINT8, {3, 4}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128}),
              Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  onnx("QLinearConv",
       R(10, {D(TP::UINT8, {1, 2, 4, 4}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128}),
              D(TP::UINT8, {3, 2, 3, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128}),
              Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  onnx("RNN", R(14, {F({2, 3, 4}), F({1, 5, 4}), F({1, 5, 5})}, A().Int("hidden_size", 5), 2));
  onnx("GRU", R(14, {F({2, 3, 4}), F({1, 15, 4}), F({1, 15, 5})}, A().Int("hidden_size", 5), 2));
  onnx("LSTM", R(14, {F({2, 3, 4}), F({1, 20, 4}), F({1, 20, 5})}, A().Int("hidden_size", 5), 3));
  onnx("DFT", R(17, {F({1, 8, 1})}));
  // onesided given: python onnx 1.12's inference ignores its default (1) and gives all 8 bins.
  onnx("STFT",
       R(17, {F({1, 16, 1}), IntScalar(4), Absent(), IntScalar(8)}, A().Int("onesided", 0)));
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    onnx(op, R(17, {IntScalar(0)}));
  }
  onnx("MelWeightMatrix", R(17, {IntScalar(4), IntScalar(16), IntScalar(8000),
                                 Const(TP::FLOAT, {}, {0}), Const(TP::FLOAT, {}, {4000})}));
  onnx("TfIdfVectorizer", R(9, {D(TP::INT64, {2, 3})},
                            A().Str("mode", "TF")
                                .Int("min_gram_length", 1)
                                .Int("max_gram_length", 1)
                                .Int("max_skip_count", 0)
                                .Ints("ngram_counts", {0})
                                .Ints("ngram_indexes", {0, 1})
                                .Ints("pool_int64s", {1, 2})));
  auto ms = [&](const std::string& op, Recipe recipe) {
    r["com.microsoft::" + op] = std::move(recipe);
  };
  ms("FastGelu", R(1, {F({2, 3, 4}), F({4})}));
  ms("Gelu", Unary(1));
  ms("QuickGelu", Unary(1));
  ms("QuantizeLinear", R(1, {F({2, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  ms("DequantizeLinear",
     R(1, {D(TP::UINT8, {2, 3}), Const(TP::FLOAT, {}, {0.1}), Const(TP::UINT8, {}, {128})}));
  onnx("Loop", LoopRecipe());
  onnx("Scan", ScanRecipe());
  AddAgreeingCases(r);
  return r;
}

// Ops left out, each with why. Keep short: a kernel here is not checked on empty tensors.
const std::map<std::string, std::string> kExcluded = {
    {"ai.onnx::If",
     "its one input is the scalar condition: no dim to set to 0 (its branches' "
     "kernels are in the matrix)"},
};

// Ops that may refuse an empty input ONNX's shape inference accepts, each with why.
const std::map<std::string, std::string> kMayRefuse = {
    {"ai.onnx::ArgMax", "an empty axis has no index to return (the spec gives no identity)"},
    {"ai.onnx::ArgMin", "an empty axis has no index to return (the spec gives no identity)"},
    {"ai.onnx::DFT",
     "an empty signal: the spec requires dft_length > 0; a last dim of 0 is "
     "neither real (1) nor complex (2)"},
    {"ai.onnx::STFT", "a last dim of 0 is neither real (1) nor complex (2)"},
};

// A case is strict when its inputs agree with each other (a single data input, every data input
// zeroed alike, a broadcast pairing): a refusal of one ONNX gives a valid shape is then a missing
// empty-tensor path, not a mismatch between inputs that ONNX's inference does not check.
struct Shapes {
  std::vector<Shape> inputs;
  bool strict = false;
};

// The data inputs' shapes of every case: each dim of each data input set to 0 in turn, then
// each dim set to 0 in every data input of the first one's rank at once, then the agreeing ones.
std::vector<Shapes> Cases(const Recipe& recipe) {
  std::vector<Shapes> cases;
  for (const auto& c : recipe.cases) cases.push_back({c, true});
  if (!cases.empty()) return cases;
  std::vector<Shape> base;
  for (const In& in : recipe.inputs) {
    if (!in.constant && !in.absent) base.push_back(in.shape);
  }
  for (size_t i = 0; i < base.size(); ++i) {
    for (size_t d = 0; d < base[i].size(); ++d) {
      cases.push_back({base, base.size() == 1});
      cases.back().inputs[i][d] = 0;
    }
  }
  const bool alike =
      std::all_of(base.begin(), base.end(), [&](const Shape& s) { return s == base[0]; });
  if (base.size() > 1) {
    for (size_t d = 0; d < base[0].size(); ++d) {
      std::vector<Shape> all = base;
      for (Shape& s : all) {
        if (s.size() == base[0].size()) s[d] = 0;
      }
      cases.push_back({all, alike});
    }
  }
  for (const auto& c : recipe.agreeing) cases.push_back({c, true});
  return cases;
}

// Data inputs hold 0.5 (floats) or 0 (indices, integers, bools): valid wherever they are read.
Tensor DataTensor(int32_t dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  if (dtype == TP::FLOAT) std::fill_n(t.mutable_data<float>(), t.size(), 0.5f);
  return t;
}

Tensor ConstTensor(const In& in) {
  Tensor t(in.dtype, in.shape);
  for (size_t i = 0; i < in.values.size(); ++i) {
    const double v = in.values[i];
    switch (in.dtype) {
      case TP::FLOAT:
        t.mutable_data<float>()[i] = static_cast<float>(v);
        break;
      case TP::INT64:
        t.mutable_data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      case TP::UINT8:
        t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      default:
        ADD_FAILURE() << "no constant of dtype " << in.dtype;
    }
  }
  return t;
}

// One case: the model and the values of its graph inputs.
struct Case {
  std::string op;  // "domain::op"
  std::string what;
  io::Model model;
  TensorMap feeds;
  bool oracle = false;  // python onnx 1.12 knows the op at this opset
  bool strict = false;
};

Case BuildCase(const std::string& full, const Recipe& recipe, const Shapes& shapes) {
  const size_t sep = full.find("::");
  const std::string domain = full.substr(0, sep) == "ai.onnx" ? "" : full.substr(0, sep);
  Case c{full, "", {}, {}, domain.empty() && recipe.opset <= 17, shapes.strict};
  onnx::ModelProto& m = c.model.proto;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(recipe.opset);
  if (!domain.empty()) {
    auto* o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(1);
  }
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("zero_size");
  onnx::NodeProto& node = *g.add_node() = recipe.attrs;
  node.set_op_type(full.substr(sep + 2));
  node.set_domain(domain);
  node.set_name("n");
  size_t data = 0;
  std::vector<std::string> texts;
  for (size_t i = 0; i < recipe.inputs.size(); ++i) {
    const In& in = recipe.inputs[i];
    const std::string name = in.absent ? "" : "in" + std::to_string(i);
    node.add_input(name);
    if (in.absent) continue;
    if (in.constant) {
      *g.add_initializer() = TensorToProto(ConstTensor(in), name);
      continue;
    }
    const Shape& shape = shapes.inputs.at(data++);
    texts.push_back(util::DimsToString(shape));
    auto* tt = g.add_input()->mutable_type()->mutable_tensor_type();
    g.mutable_input(g.input_size() - 1)->set_name(name);
    tt->set_elem_type(in.dtype);
    for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    c.feeds[name] = DataTensor(in.dtype, shape);
  }
  for (int i = 0; i < recipe.outputs; ++i) {
    node.add_output("out" + std::to_string(i));
    g.add_output()->set_name("out" + std::to_string(i));
  }
  c.what = full + "(" + fmt::format("{}", fmt::join(texts, ", ")) + ")";
  return c;
}

// The case with every data input after the first made an initializer: the kernels' prepare
// steps (weight packing for Conv, MatMul, Gemm, the recurrent ops, ...) then see the empty
// weights at plan time.
Case WithConstantWeights(const Case& c) {
  Case out = c;
  out.what += " with constant weights";
  onnx::GraphProto& g = *out.model.proto.mutable_graph();
  while (g.input_size() > 1) {
    const std::string name = g.input(g.input_size() - 1).name();
    *g.add_initializer() = TensorToProto(out.feeds.at(name), name);
    out.feeds.erase(name);
    g.mutable_input()->RemoveLast();
  }
  return out;
}

// Output shapes by ONNX's shape inference, per case index: "ok [..];[..]", "error ...".
std::map<size_t, std::string> OracleShapes(const std::vector<Case>& cases,
                                           const testing::TempDir& dir) {
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!cases[i].oracle) continue;
    std::ofstream out(dir / fmt::format("{:05}.onnx", i), std::ios::binary);
    cases[i].model.proto.SerializeToOstream(&out);
  }
  auto r = testing::RunShell(std::string(testing::kSystemPython) + " " +
                             testing::TestData("zero_size/onnx_shapes.py").string() + " " +
                             dir.path().string());
  std::map<size_t, std::string> shapes;
  if (r.exit_code != 0) return shapes;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.find(' ');
    shapes[std::stoul(line.substr(0, space))] = line.substr(space + 1);
  }
  return shapes;
}

std::string ShapesText(const std::vector<NamedTensor>& outputs) {
  std::vector<std::string> texts;
  for (const auto& o : outputs) {
    std::vector<std::string> dims;
    for (int64_t d : o.value.shape()) dims.push_back(std::to_string(d));
    texts.push_back("[" + fmt::format("{}", fmt::join(dims, ",")) + "]");
  }
  return fmt::format("{}", fmt::join(texts, ";"));
}

// Whether porttool's shapes match the oracle's, where the oracle knows every dim.
bool ShapesAgree(const std::string& ours, const std::string& onnx) {
  std::istringstream a(ours), b(onnx);
  std::string x, y;
  while (std::getline(b, y, ';')) {
    if (!std::getline(a, x, ';')) return false;
    if (y.find('?') == std::string::npos && x != y) return false;
  }
  return true;
}

// A value's dims as the oracle prints them ("[2,0,4]", "?" where unknown).
std::string DimsText(const onnx::ValueInfoProto& vi) {
  const auto& tt = vi.type().tensor_type();
  if (!tt.has_shape()) return "?";
  std::vector<std::string> dims;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
  }
  return "[" + fmt::format("{}", fmt::join(dims, ",")) + "]";
}

// porttool's own shape inference (lib/shape) over the case: the outputs' dims, or "" when it
// refuses the node (only ever with Error(kBadInput)).
std::string InferredByPorttool(const Case& c) {
  io::Model model = c.model;
  try {
    shape::InferShapes(model);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << c.what << ": shape inference: " << e.what();
    return "";
  }
  std::map<std::string, std::string> known;
  const auto& g = model.proto.graph();
  for (const auto& vi : g.value_info()) known[vi.name()] = DimsText(vi);
  for (const auto& vi : g.output()) known[vi.name()] = DimsText(vi);
  std::vector<std::string> texts;
  for (const auto& name : g.node(0).output())
    texts.push_back(known.count(name) ? known[name] : "?");
  return fmt::format("{}", fmt::join(texts, ";"));
}

struct Tally {
  int ran = 0;
  int refused = 0;
  int inferred = 0;  // runs whose shapes porttool's inference also gave
};

// Runs one case: success with the shapes both inferences give, or Error(kBadInput) (a refusal
// of a strict case ONNX gives a valid shape fails unless the op may refuse).
void RunCase(const Case& c, const std::string& onnx, Tally& tally) {
  const bool onnx_ok = onnx.rfind("ok ", 0) == 0;
  const std::string inferred = InferredByPorttool(c);
  try {
    Session session(c.model);
    const std::string ours = ShapesText(session.Run(c.feeds));
    ++tally.ran;
    if (onnx_ok) {
      EXPECT_TRUE(ShapesAgree(ours, onnx.substr(3)))
          << c.what << ": ran to " << ours << ", ONNX infers " << onnx.substr(3);
    } else if (!onnx.empty()) {
      ADD_FAILURE() << c.what << ": ran to " << ours << ", ONNX refuses it: " << onnx;
    }
    if (!inferred.empty()) {
      tally.inferred += inferred.find('?') == std::string::npos;
      EXPECT_TRUE(ShapesAgree(ours, inferred))
          << c.what << ": ran to " << ours << ", porttool infers " << inferred;
    }
  } catch (const Error& e) {
    ++tally.refused;
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << c.what << ": " << e.what();
    const bool valid = onnx.find('?') == std::string::npos && onnx.find('-') == std::string::npos;
    if (c.strict && onnx_ok && valid && !kMayRefuse.count(c.op)) {
      ADD_FAILURE() << c.what << ": refused (" << e.what() << ") but ONNX infers "
                    << onnx.substr(3);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.what << ": " << e.what();
  }
}

// Every case of every registered op; an op with neither a recipe nor an exclusion fails.
std::vector<Case> AllCases() {
  const std::map<std::string, Recipe> recipes = Recipes();
  std::vector<Case> cases;
  for (const std::string& op : KernelRegistry::Default().OpNames()) {
    if (kExcluded.count(op)) continue;
    auto it = recipes.find(op);
    if (it == recipes.end()) {
      ADD_FAILURE() << op << " has no recipe in the zero-size matrix: add one (or an exclusion "
                    << "with its reason)";
      continue;
    }
    for (const auto& shapes : Cases(it->second)) cases.push_back(BuildCase(op, it->second, shapes));
  }
  return cases;
}

TEST(ZeroSizeKernels, EveryKernelTakesEveryZeroDim) {
  const std::vector<Case> cases = AllCases();
  testing::TempDir dir;
  const std::map<size_t, std::string> oracle = OracleShapes(cases, dir);
  if (oracle.empty()) PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  Tally tally;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto found = oracle.find(i);
    const std::string onnx = found == oracle.end() ? "" : found->second;
    RunCase(cases[i], onnx, tally);
    if (cases[i].feeds.size() > 1) RunCase(WithConstantWeights(cases[i]), onnx, tally);
  }
  std::printf("%zu cases: %d ran (%d with every output shape inferred by porttool), %d refused\n",
              cases.size(), tally.ran, tally.inferred, tally.refused);
}

// The kernels whose output has elements although an input has none (a reduction's identity, a
// concatenation with a non-empty part, padding, a bias alone), against ONNX Runtime's values.
struct OrtCase {
  const char* what;
  NodeBuilder node;
  int opset;
  std::vector<std::pair<std::string, Tensor>> inputs;
  int32_t out_dtype = TP::FLOAT;
};

Tensor Ones(const Shape& shape) {
  Tensor t(TP::FLOAT, shape);
  std::fill_n(t.mutable_data<float>(), t.size(), 1.f);
  return t;
}

NodeBuilder Node(const std::string& op, int inputs) { return NodeBuilder(op, inputs); }

std::vector<OrtCase> OrtCases() {
  using testing_util::Int64Tensor;
  const Tensor empty_axis(TP::FLOAT, {2, 0, 4});
  const Tensor axis1 = Int64Tensor({1}, {1});
  std::vector<OrtCase> cases;
  for (const char* op : {"ReduceSum"}) {
    cases.push_back(
        {op, Node(op, 2).Int("keepdims", 1), 13, {{"in0", empty_axis}, {"in1", axis1}}});
  }
  for (const char* op : {"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceProd", "ReduceLogSumExp",
                         "ReduceLogSum", "ReduceMax", "ReduceMin", "ReduceMean"}) {
    cases.push_back(
        {op, Node(op, 1).Ints("axes", {1}).Int("keepdims", 0), 13, {{"in0", empty_axis}}});
  }
  cases.push_back({"Concat of an empty and a full tensor",
                   Node("Concat", 2).Int("axis", 0),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {0, 3})}, {"in1", Ones({2, 3})}}});
  cases.push_back({"Pad of an empty tensor",
                   Node("Pad", 3),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {0, 3})},
                    {"in1", Int64Tensor({4}, {1, 0, 1, 0})},
                    {"in2", testing_util::FloatTensor({}, {7})}}});
  cases.push_back({"MatMul over an empty inner dim",
                   Node("MatMul", 2),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {2, 0})}, {"in1", Tensor(TP::FLOAT, {0, 3})}}});
  cases.push_back({"Gemm over an empty inner dim, with C",
                   Node("Gemm", 3),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {2, 0})},
                    {"in1", Tensor(TP::FLOAT, {0, 3})},
                    {"in2", Ones({3})}}});
  cases.push_back({"Conv of no input channels (the bias alone)",
                   Node("Conv", 3),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {1, 0, 4, 4})},
                    {"in1", Tensor(TP::FLOAT, {3, 0, 3, 3})},
                    {"in2", Ones({3})}}});
  cases.push_back({"Sum of an empty and a broadcast tensor",
                   Node("Sum", 2),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {0, 3})}, {"in1", Ones({1, 3})}}});
  cases.push_back({"Expand of an empty tensor",
                   Node("Expand", 2),
                   13,
                   {{"in0", Tensor(TP::FLOAT, {0, 1})}, {"in1", Int64Tensor({2}, {0, 4})}}});
  OrtCase shape{"Shape of an empty tensor", Node("Shape", 1), 15, {{"in0", empty_axis}}};
  shape.out_dtype = TP::INT64;
  cases.push_back(shape);
  OrtCase size{"Size of an empty tensor", Node("Size", 1), 13, {{"in0", empty_axis}}};
  size.out_dtype = TP::INT64;
  cases.push_back(size);
  return cases;
}

TEST(ZeroSizeKernels, OutputsFromEmptyInputsMatchOnnxRuntime) {
  const std::string reason = testing_util::OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  for (const OrtCase& c : OrtCases()) {
    SCOPED_TRACE(c.what);
    testing_util::ExpectMatchesOrt(
        testing_util::OneNodeModel(c.node.node(), c.opset, c.inputs, c.out_dtype), c.inputs);
  }
}

// Scan over 0 rows: the state stays its initial value and the scan output has 0 rows of the
// body's row shape, as ONNX's shape inference gives. (ONNX Runtime 1.x refuses it: its slicer
// asserts a first row, so there is no oracle to run here.)
TEST(ZeroSizeKernels, ScanOfZeroIterationsKeepsTheStateAndStacksNothing) {
  onnx::NodeProto node = ScanRecipe().attrs;
  node.set_op_type("Scan");
  node.set_name("scan");
  for (const char* name : {"in0", "in1"}) node.add_input(name);
  for (const char* name : {"out0", "out1"}) node.add_output(name);
  const std::vector<std::pair<std::string, Tensor>> inputs = {
      {"in0", testing_util::FloatTensor({3}, {1, 2, 3})}, {"in1", Tensor(TP::FLOAT, {0, 3})}};
  io::Model model;
  model.proto = testing_util::OneNodeModel(node, 16, inputs, TP::FLOAT);
  Session session(model);
  const auto outputs = session.Run({{"in0", inputs[0].second}, {"in1", inputs[1].second}});
  ASSERT_EQ(outputs.size(), 2u);
  testing_util::ExpectClose(outputs[0].value, {3}, {1, 2, 3}, "final state");
  EXPECT_EQ(outputs[1].value.shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace porttool::runtime
