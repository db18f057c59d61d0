// Session-level conv fusion (fusion.h): each tail the matcher fuses gives the unfused graph's
// outputs, the run really fused it (fused_nodes), and the comparison is sharp enough to catch a
// kernel that drops the tail (a Conv kernel that claims the epilogue without applying it gives
// different outputs). Observed runs see every tensor of the original graph.
#include "lib/runtime/fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

// A small graph written node by node: input x, outputs given by name.
class Graph {
 public:
  explicit Graph(std::vector<int64_t> x_dims, int opset = 13) : x_dims_(std::move(x_dims)) {
    model_.proto.set_ir_version(8);
    model_.proto.add_opset_import()->set_version(opset);
    auto* in = graph()->add_input();
    in->set_name("x");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
    for (int64_t d : x_dims_) {
      in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  onnx::GraphProto* graph() { return model_.proto.mutable_graph(); }

  std::string Const(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
    return name;
  }
  // n values from a fixed stream in [lo, hi).
  std::string Random(const std::string& name, std::vector<int64_t> dims, float lo, float hi) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng_);
    return Const(name, dims, v);
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> in, std::string out) {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  static void Attr(onnx::NodeProto* n, const std::string& name, float f) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(f);
  }
  static void Ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t i : v) a->add_ints(i);
  }
  // Conv of x (c_in -> c_out, k x k, same padding, group) with random weights and bias.
  std::string Conv(const std::string& x, int64_t c_in, int64_t c_out, int64_t k,
                   const std::string& out, int64_t group = 1) {
    const std::string w = Random(out + "_w", {c_out, c_in / group, k, k}, -0.5f, 0.5f);
    const std::string b = Random(out + "_b", {c_out}, -0.5f, 0.5f);
    auto* n = Node("Conv", {x, w, b}, out);
    Ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
    if (group != 1) {
      auto* a = n->add_attribute();
      a->set_name("group");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(group);
    }
    return out;
  }
  // x [.., k] times a random constant [k, n]: a linear layer without its bias.
  std::string MatMul(const std::string& x, int64_t k, int64_t n, const std::string& out) {
    Node("MatMul", {x, Random(out + "_w", {k, n}, -0.5f, 0.5f)}, out);
    return out;
  }
  void Output(const std::string& name) {
    auto* o = graph()->add_output();
    o->set_name(name);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  }
  const io::Model& model() const { return model_; }
  Tensor Input() {
    Tensor t(TP::FLOAT, x_dims_);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng_);
    return t;
  }

 private:
  io::Model model_;
  std::vector<int64_t> x_dims_;
  std::mt19937 rng_{5};
};

// The default registry with Conv, ConvTranspose and MatMul kernels that claim the epilogue and
// drop it.
const KernelRegistry& DroppingRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r = KernelRegistry::Default();
    for (const char* op : {"Conv", "ConvTranspose", "MatMul"}) {
      const KernelFn kernel = *r.Find("", op, 13);
      const PrepareFn* found = r.FindPrepare("", op, 13);
      const PrepareFn prepare = found ? *found : PrepareFn{};
      r.Register(
          "", op, 1, 17,
          [kernel](KernelContext& ctx) {
            const Epilogue* e = ctx.epilogue();
            ctx.set_epilogue(nullptr);
            kernel(ctx);
            if (e) ctx.mark_epilogue_applied();
          },
          prepare);
      r.AcceptEpilogue("", op);
    }
    return r;
  }();
  return registry;
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float worst = 0;
  for (int64_t i = 0; i < a.size() && a.shape() == b.shape(); ++i) {
    worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  }
  return worst;
}

float MaxAbs(const Tensor& a) {
  float m = 0;
  for (int64_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a.data<float>()[i]));
  return m;
}

// Runs `g` fused, unfused and with the dropping kernel; expects `fused_nodes` fused nodes, the
// fused outputs within 1e-6 of the output range of the unfused ones, and the dropping kernel
// visibly off.
void ExpectFusedLikeUnfused(Graph& g, int fused_nodes, bool dropping_detectable = true,
                            bool bitwise = false) {
  const Tensor x = g.Input();
  Session fused(g.model());
  Session plain(g.model(), {.no_fusion = true});
  Session dropping(g.model(), {.registry = &DroppingRegistry()});
  EXPECT_EQ(fused.fused_nodes(), fused_nodes);
  EXPECT_EQ(plain.fused_nodes(), 0);
  const auto a = fused.Run({{"x", x}});
  const auto b = plain.Run({{"x", x}});
  const auto c = dropping.Run({{"x", x}});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float range = std::max(MaxAbs(b[i].value), 1e-30f);
    EXPECT_LE(MaxAbsDiff(a[i].value, b[i].value), bitwise ? 0.f : 1e-6f * range) << b[i].name;
    if (dropping_detectable) {
      EXPECT_GT(MaxAbsDiff(c[i].value, b[i].value), 1e-3f * range)
          << b[i].name << ": the comparison would not notice a dropped epilogue";
    }
  }
}

TEST(ConvFusion, EachActivationFusesAndMatchesUnfused) {
  for (const char* act : {"Relu", "LeakyRelu", "HardSigmoid", "Sigmoid", "HardSwish"}) {
    SCOPED_TRACE(act);
    Graph g({1, 4, 9, 7}, 14);
    const std::string c = g.Conv("x", 4, 6, 3, "conv");
    auto* n = g.Node(act, {c}, "y");
    if (std::string(act) == "LeakyRelu") Graph::Attr(n, "alpha", 0.1f);
    if (std::string(act) == "HardSigmoid") Graph::Attr(n, "alpha", 0.3f);
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1);
  }
}

TEST(ConvFusion, ClipFromInputsAndFromAttributes) {
  {
    Graph g({1, 3, 8, 8}, 13);
    const std::string c = g.Conv("x", 3, 5, 3, "conv");
    g.Node("Clip", {c, g.Const("lo", {}, {0.f}), g.Const("hi", {}, {0.4f})}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1);
  }
  {
    Graph g({1, 3, 8, 8}, 6);
    const std::string c = g.Conv("x", 3, 5, 3, "conv");
    auto* n = g.Node("Clip", {c}, "y");
    Graph::Attr(n, "min", -0.1f);
    Graph::Attr(n, "max", 0.2f);
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1);
  }
}

// Paddle2ONNX's conv + folded batch norm + hard_swish: Conv, Mul, Add, then
// y * Clip(y + 3, 0, 6) / 6 — five nodes into the conv.
TEST(ConvFusion, PerChannelAffineAndClipDivHardSwish) {
  Graph g({1, 4, 10, 10});
  const std::string c = g.Conv("x", 4, 8, 1, "conv");  // the pointwise path
  g.Node("Mul", {c, g.Random("s", {1, 8, 1, 1}, 0.5f, 2.f)}, "m");
  g.Node("Add", {g.Random("t", {8, 1, 1}, -1.f, 1.f), "m"}, "a");
  g.Node("Add", {"a", g.Const("three", {}, {3.f})}, "a3");
  g.Node("Clip", {"a3", g.Const("zero", {}, {0.f}), g.Const("six", {}, {6.f})}, "clip");
  g.Node("Mul", {"a", "clip"}, "hs");
  g.Node("Div", {"hs", g.Const("six_d", {}, {6.f})}, "y");
  g.Output("y");
  ExpectFusedLikeUnfused(g, 6);
}

TEST(ConvFusion, BatchNormResidualRelu) {
  Graph g({2, 6, 7, 5});
  const std::string c = g.Conv("x", 6, 6, 3, "conv");
  g.Node("BatchNormalization",
         {c, g.Random("gamma", {6}, 0.5f, 1.5f), g.Random("beta", {6}, -1.f, 1.f),
          g.Random("mean", {6}, -1.f, 1.f), g.Random("var", {6}, 0.5f, 2.f)},
         "bn");
  g.Node("Add", {"bn", "x"}, "res");
  g.Node("Relu", {"res"}, "y");
  g.Output("y");
  ExpectFusedLikeUnfused(g, 3);
}

// ConvTranspose x (c -> c_out, kernel `k` with stride `stride`, no padding) with random weights
// and no bias input.
std::string ConvTransposeNode(Graph& g, const std::string& x, int64_t c, int64_t c_out,
                              std::vector<int64_t> k, int64_t stride, const std::string& out) {
  std::vector<int64_t> w_dims = {c, c_out};
  w_dims.insert(w_dims.end(), k.begin(), k.end());
  auto* n = g.Node("ConvTranspose", {x, g.Random(out + "_w", w_dims, -0.5f, 0.5f)}, out);
  Graph::Ints(n, "strides", std::vector<int64_t>(k.size(), stride));
  return out;
}

TEST(ConvFusion, ConvTransposeTakesItsBiasBatchNormAndActivation) {
  {
    // det's FPN head: a 2x2 stride-2 ConvTranspose (each output gets one tap), its bias as a
    // [1, C, 1, 1] Add, BatchNormalization, Relu.
    Graph g({1, 6, 5, 7});
    const std::string ct = ConvTransposeNode(g, "x", 6, 4, {2, 2}, 2, "ct");
    g.Node("Add", {ct, g.Random("b", {1, 4, 1, 1}, -1.f, 1.f)}, "biased");
    g.Node("BatchNormalization",
           {"biased", g.Random("gamma", {4}, 0.5f, 1.5f), g.Random("beta", {4}, -1.f, 1.f),
            g.Random("mean", {4}, -1.f, 1.f), g.Random("var", {4}, 0.5f, 2.f)},
           "bn");
    g.Node("Relu", {"bn"}, "y");
    g.Output("y");
    // The Add is the head's bias, rounded where the node rounds it: the same bits.
    ExpectFusedLikeUnfused(g, 3, true, true);
  }
  {
    // Overlapping taps (3x3 stride 2: col2im sums them) and a residual of the output's shape.
    Graph g({2, 3, 4, 4});
    const std::string other = ConvTransposeNode(g, "x", 3, 5, {3, 3}, 2, "other");
    const std::string ct = ConvTransposeNode(g, "x", 3, 5, {3, 3}, 2, "ct");
    g.Node("Mul", {ct, g.Random("s", {5, 1, 1}, 0.5f, 2.f)}, "scaled");
    g.Node("Add", {"scaled", other}, "sum");
    auto* act = g.Node("LeakyRelu", {"sum"}, "y");
    Graph::Attr(act, "alpha", 0.2f);
    g.Output("y");
    ExpectFusedLikeUnfused(g, 3);
  }
  {
    // A kernel two deep: the taps tile the output, but a piece's output rows are not contiguous.
    Graph g({1, 4, 3, 3, 5});
    ConvTransposeNode(g, "x", 4, 3, {2, 2, 2}, 2, "ct");
    g.Node("HardSigmoid", {"ct"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1);
  }
}

TEST(ConvFusion, DepthwiseAndWinogradPathsApplyTheTail) {
  {
    Graph g({1, 8, 12, 12});
    const std::string c = g.Conv("x", 8, 8, 3, "conv", 8);
    g.Node("Add", {c, g.Random("t", {1, 8, 1, 1}, -1.f, 1.f)}, "a");
    g.Node("LeakyRelu", {"a"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 2);
  }
  {
    Graph g({1, 16, 34, 34});  // 3x3, 16 -> 16 over 34x34: the Winograd path
    const std::string c = g.Conv("x", 16, 16, 3, "conv");
    g.Node("Relu", {c}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1);
  }
}

// A batch of 2-position images with prepared weights runs as C^T = col^T W^T (conv.cc's narrow
// batch): the bias and tail are applied on the transposed product, a residual after the gather.
TEST(ConvFusion, NarrowBatchAppliesTheTailOnEitherLayout) {
  {
    Graph g({4, 40, 2, 1});
    g.Node("LeakyRelu", {g.Conv("x", 40, 48, 3, "conv")}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 1, true, /*bitwise=*/true);
  }
  {
    Graph g({4, 40, 2, 1});
    const std::string c = g.Conv("x", 40, 48, 3, "conv");
    g.Node("Mul", {c, g.Random("s", {1, 48, 1, 1}, 0.5f, 2.f)}, "m");
    g.Node("Add", {"m", g.Random("t", {1, 48, 1, 1}, -1.f, 1.f)}, "a");
    g.Node("HardSigmoid", {"a"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 3);
  }
  {
    Graph g({4, 48, 2, 1});
    g.Node("Add", {g.Conv("x", 48, 48, 3, "conv"), "x"}, "res");
    g.Node("Relu", {"res"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 2, true, /*bitwise=*/true);
  }
}

TEST(ConvFusion, SharedValuesWidthBroadcastAndUnknownAttributesAreNotFused) {
  {
    Graph g({1, 3, 6, 6});
    const std::string c = g.Conv("x", 3, 4, 3, "conv");
    g.Node("Relu", {c}, "y");
    g.Output("y");
    g.Output("conv");  // the conv output is seen by the caller
    ExpectFusedLikeUnfused(g, 0, false);
  }
  {
    Graph g({1, 3, 6, 6});
    const std::string c = g.Conv("x", 3, 4, 3, "conv");
    g.Node("Relu", {c}, "y");
    g.Node("Sigmoid", {c}, "z");  // two readers
    g.Output("y");
    g.Output("z");
    ExpectFusedLikeUnfused(g, 0, false);
  }
  {
    Graph g({1, 3, 6, 6});
    const std::string c = g.Conv("x", 3, 4, 3, "conv");
    g.Node("Mul", {c, g.Random("s", {4}, 0.5f, 1.f)}, "y");  // [4] broadcasts over W, not C
    g.Output("y");
    EXPECT_EQ(Session(g.model()).fused_nodes(), 0);
  }
  {
    // A Relu with an attribute it does not have fails when run; fused, it would not.
    Graph g({1, 3, 6, 6});
    const std::string c = g.Conv("x", 3, 4, 3, "conv");
    Graph::Attr(g.Node("Relu", {c}, "y"), "alpha", 1.f);
    g.Output("y");
    Session session(g.model());
    EXPECT_EQ(session.fused_nodes(), 0);
    EXPECT_THROW(session.Run({{"x", g.Input()}}), Error);
  }
}

// A residual that broadcasts ([N, C, 1, 1] from a graph input) is matched at plan time but
// refused by the kernel at run time: the Session then runs the absorbed nodes.
TEST(ConvFusion, ResidualOfAnotherShapeFallsBackToTheNodes) {
  Graph g({1, 4, 6, 6});
  auto* r = g.graph()->add_input();
  r->set_name("r");
  r->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  const std::string c = g.Conv("x", 4, 4, 3, "conv");
  g.Node("Add", {c, "r"}, "sum");
  g.Node("Relu", {"sum"}, "y");
  g.Output("y");
  Session fused(g.model());
  Session plain(g.model(), {.no_fusion = true});
  EXPECT_EQ(fused.fused_nodes(), 2);
  Tensor x = g.Input();
  Tensor rv(TP::FLOAT, {1, 4, 1, 1});
  for (int i = 0; i < 4; ++i) rv.mutable_data<float>()[i] = 0.25f * i - 0.5f;
  const auto a = fused.Run({{"x", x}, {"r", rv}});
  const auto b = plain.Run({{"x", x}, {"r", rv}});
  EXPECT_EQ(MaxAbsDiff(a[0].value, b[0].value), 0.f);
}

// PP-OCRv4 det's learnable affine block after the activation: Conv, Paddle's hard_swish, then
// Mul and Add by scalars (each optional, in that order), bitwise as the nodes.
TEST(ConvFusion, ScalarAffineAfterTheActivation) {
  for (const bool mul : {false, true})
    for (const bool add : {false, true}) {
      if (!mul && !add) continue;
      SCOPED_TRACE(std::string(mul ? "Mul" : "") + (add ? "Add" : ""));
      Graph g({1, 4, 10, 10});
      const std::string c = g.Conv("x", 4, 8, 3, "conv");
      g.Node("Add", {c, g.Const("three", {}, {3.f})}, "a3");
      g.Node("Clip", {"a3", g.Const("zero", {}, {0.f}), g.Const("six", {}, {6.f})}, "clip");
      g.Node("Mul", {c, "clip"}, "hs");
      std::string v = g.Node("Div", {"hs", g.Const("six_d", {}, {6.f})}, "act")->output(0);
      if (mul) v = g.Node("Mul", {g.Const("k", {1}, {1.7f}), v}, "lab_mul")->output(0);
      if (add) v = g.Node("Add", {v, g.Const("t", {1}, {-0.3f})}, "lab_add")->output(0);
      g.Output(v);
      ExpectFusedLikeUnfused(g, 4 + mul + add, true, true);
    }
  {
    Graph g({1, 3, 8, 8});  // after a one-node activation, and a Relu's -0 survives the Mul
    g.Node("Relu", {g.Conv("x", 3, 5, 3, "conv")}, "r");
    g.Node("Mul", {"r", g.Const("k", {}, {-2.f})}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 2, true, true);
  }
}

// SiLU (x * Sigmoid(x)) and both erf forms of GELU after a conv: two readers of the conv output.
TEST(ConvFusion, SiluAndGeluFuseBitwise) {
  {
    Graph g({1, 4, 9, 9});
    const std::string c = g.Conv("x", 4, 6, 3, "conv");
    g.Node("Sigmoid", {c}, "sig");
    g.Node("Mul", {"sig", c}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 2, true, true);
  }
  {
    Graph g({1, 4, 9, 9});
    const std::string c = g.Conv("x", 4, 6, 1, "conv");
    g.Node("Div", {c, g.Const("sqrt2", {}, {1.4142135f})}, "scaled");
    g.Node("Erf", {"scaled"}, "erf");
    g.Node("Add", {"erf", g.Const("one", {}, {1.f})}, "u");
    g.Node("Mul", {c, "u"}, "w");
    g.Node("Mul", {"w", g.Const("half", {}, {0.5f})}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 5, true, true);
  }
}

// A linear layer's tail in the MatMul epilogue: bias [N], residual and activation, over a
// batched A folded into one GEMM, bitwise equal to the unfused nodes; with a per-column scale
// too (composed with the bias at plan time, so within rounding only).
TEST(MatMulFusion, BiasResidualAndActivationsFuse) {
  for (const bool scaled : {false, true})
    for (const char* act : {"Relu", "LeakyRelu", "Sigmoid", "HardSwish", ""}) {
      SCOPED_TRACE(std::string(act) + (scaled ? " scaled" : ""));
      const bool has_act = !std::string(act).empty();
      Graph g({2, 5, 24});
      const std::string r = g.MatMul("x", 24, 40, "r");  // the residual, computed first
      const std::string h = g.MatMul("x", 24, 40, "mm");
      std::string v = g.Node("Add", {h, g.Random("bias", {40}, -1.f, 1.f)}, "biased")->output(0);
      if (scaled) v = g.Node("Mul", {g.Random("scale", {40}, 0.5f, 2.f), v}, "scaled")->output(0);
      g.Node("Add", {v, r}, has_act ? "sum" : "y");
      if (has_act) g.Node(act, {"sum"}, "y");
      g.Output("y");
      ExpectFusedLikeUnfused(g, 2 + scaled + has_act, true, !scaled);
    }
}

TEST(MatMulFusion, GeluBothFormsAndSiluFuseBitwise) {
  {
    // The generated transformer block's form: x * ((Erf(x * k) + 1) * 0.5).
    Graph g({3, 64});
    const std::string h = g.MatMul("x", 64, 96, "mm");
    g.Node("Add", {h, g.Random("bias", {96}, -1.f, 1.f)}, "b");
    g.Node("Mul", {"b", g.Const("k", {}, {0.70710678f})}, "scaled");
    g.Node("Erf", {"scaled"}, "erf");
    g.Node("Add", {g.Const("one", {}, {1.f}), "erf"}, "u");
    g.Node("Mul", {"u", g.Const("half", {}, {0.5f})}, "gate");
    g.Node("Mul", {"b", "gate"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 6, true, true);
  }
  {
    // torch.nn.functional.gelu's export: (x * (Erf(x / sqrt2) + 1)) * 0.5.
    Graph g({7, 33});
    const std::string h = g.MatMul("x", 33, 50, "mm");
    g.Node("Div", {h, g.Const("sqrt2", {}, {1.4142135f})}, "scaled");
    g.Node("Erf", {"scaled"}, "erf");
    g.Node("Add", {"erf", g.Const("one", {}, {1.f})}, "u");
    g.Node("Mul", {h, "u"}, "w");
    g.Node("Mul", {"w", g.Const("half", {}, {0.5f})}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 5, true, true);
  }
  {
    Graph g({4, 20});
    const std::string h = g.MatMul("x", 20, 30, "mm");
    g.Node("Sigmoid", {h}, "sig");
    g.Node("Mul", {h, "sig"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 2, true, true);
  }
}

TEST(MatMulFusion, OnlyRankOneConstantsAndNoBatchNorm) {
  {
    // A [1, N] bias would broadcast a 1-D A's output to 2-D: rank 2 constants are not fused.
    Graph g({3, 8});
    g.Node("Add", {g.MatMul("x", 8, 5, "mm"), g.Random("bias", {1, 5}, -1.f, 1.f)}, "y");
    g.Output("y");
    EXPECT_EQ(Session(g.model()).fused_nodes(), 0);
  }
  {
    // BatchNormalization normalises axis 1, not a MatMul's columns.
    Graph g({2, 5, 8});
    g.Node("BatchNormalization",
           {g.MatMul("x", 8, 5, "mm"), g.Random("gamma", {5}, 0.5f, 1.5f),
            g.Random("beta", {5}, -1.f, 1.f), g.Random("mean", {5}, -1.f, 1.f),
            g.Random("var", {5}, 0.5f, 2.f)},
           "y");
    g.Output("y");
    EXPECT_EQ(Session(g.model()).fused_nodes(), 0);
    ExpectFusedLikeUnfused(g, 0, false);
  }
}

// LayerNormalization as torch exported it before opset 17: m = ReduceMean(x); d = x - m;
// y = d / Sqrt(ReduceMean(Pow(d, 2)) + eps), over the last axis. Returns y's name.
std::string LayerNormNodes(Graph& g, const std::string& x, const std::string& prefix) {
  auto* mean = g.Node("ReduceMean", {x}, prefix + "mean");
  Graph::Ints(mean, "axes", {-1});
  g.Node("Sub", {x, mean->output(0)}, prefix + "d");
  g.Node("Pow", {prefix + "d", g.Const(prefix + "two", {}, {2.f})}, prefix + "sq");
  auto* var = g.Node("ReduceMean", {prefix + "sq"}, prefix + "var");
  Graph::Ints(var, "axes", {-1});
  g.Node("Add", {prefix + "var", g.Const(prefix + "eps", {}, {1e-5f})}, prefix + "ve");
  g.Node("Sqrt", {prefix + "ve"}, prefix + "sd");
  return g.Node("Div", {prefix + "d", prefix + "sd"}, prefix + "norm")->output(0);
}

TEST(LayerNormFusion, NodesFuseIntoTheMeanBitwiseAndWithTheirAffineTail) {
  {
    Graph g({2, 5, 24});
    g.Node("Identity", {LayerNormNodes(g, "x", "")}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 6, false, true);  // a dropped normalisation changes every bit
  }
  {
    // hey_jarvis's form: the normalised rows scaled and shifted per column, then Relu.
    Graph g({3, 96});
    const std::string n = LayerNormNodes(g, "x", "");
    g.Node("Mul", {n, g.Random("gamma", {96}, 0.5f, 2.f)}, "scaled");
    g.Node("Add", {"scaled", g.Random("beta", {96}, -1.f, 1.f)}, "shifted");
    g.Node("Relu", {"shifted"}, "y");
    g.Output("y");
    ExpectFusedLikeUnfused(g, 9, false);
  }
}

TEST(LayerNormFusion, OtherAxesSharedValuesAndOtherExponentsStayNodes) {
  const auto fused_nodes = [](Graph& g) { return Session(g.model()).fused_nodes(); };
  {
    Graph g({2, 5, 24});
    const std::string n = LayerNormNodes(g, "x", "");
    g.graph()->mutable_node(0)->mutable_attribute(0)->set_ints(0, 1);  // the mean over axis 1
    g.Output(n);
    EXPECT_EQ(fused_nodes(g), 0);
    ExpectFusedLikeUnfused(g, 0, false, true);
  }
  {
    Graph g({4, 16});
    g.Output(LayerNormNodes(g, "x", ""));
    g.Output("d");  // the deviation is seen outside the normalisation
    EXPECT_EQ(fused_nodes(g), 0);
  }
  {
    Graph g({4, 16});
    const std::string n = LayerNormNodes(g, "x", "");
    g.graph()->mutable_initializer(0)->set_float_data(0, 3.f);  // Pow 3: not a variance
    g.Output(n);
    EXPECT_EQ(fused_nodes(g), 0);
  }
}

TEST(ConvFusion, ObservedRunsSeeEveryTensorOfTheOriginalGraph) {
  Graph g({1, 4, 10, 10});
  const std::string c = g.Conv("x", 4, 8, 1, "conv");
  g.Node("Mul", {c, g.Random("s", {1, 8, 1, 1}, 0.5f, 2.f)}, "m");
  g.Node("Add", {"m", g.Random("t", {1, 8, 1, 1}, -1.f, 1.f)}, "a");
  g.Node("Relu", {"a"}, "y");
  g.Output("y");
  Session session(g.model());
  ASSERT_EQ(session.fused_nodes(), 3);
  std::set<std::string> seen;
  session.Run({{"x", g.Input()}},
              [&](const std::string& name, const Tensor&) { seen.insert(name); });
  EXPECT_EQ(seen, (std::set<std::string>{"conv", "m", "a", "y"}));
}

}  // namespace
}  // namespace porttool::runtime
