// Pad folded into the Conv it feeds (pad_fusion.h): every fold runs without its Pad node and
// gives the unfused session's bits at 1 and 2 threads, on each conv path (im2col, depthwise,
// Winograd, pointwise, the strided 1-D GEMM, small-image batches); and what must not fold does
// not.
#include "lib/runtime/pad_fusion.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace pad_fusion_test {

using TP = onnx::TensorProto;
using AP = onnx::AttributeProto;

// A graph written node by node over one float input "x".
class PadGraph {
 public:
  PadGraph(std::vector<int64_t> x_dims, int opset) : x_dims_(std::move(x_dims)) {
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
  const io::Model& model() const { return model_; }

  std::string Floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
    return name;
  }
  std::string Ints(const std::string& name, std::vector<int64_t> v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t i : v) t->add_int64_data(i);
    return name;
  }
  std::string Random(const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng_);
    return Floats(name, dims, v);
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out) {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(out[0]);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  static void IntsAttr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AP::INTS);
    for (int64_t i : v) a->add_ints(i);
  }
  static void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AP::INT);
    a->set_i(v);
  }
  static void StringAttr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AP::STRING);
    a->set_s(v);
  }
  static void FloatAttr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AP::FLOAT);
    a->set_f(v);
  }
  // Pad of `in` by an int64 initializer (opset >= 11), with an optional constant_value input.
  onnx::NodeProto* Pad(const std::string& in, std::vector<int64_t> pads, const std::string& out,
                       std::optional<std::string> value = std::nullopt) {
    std::vector<std::string> inputs = {in, Ints(out + "_pads", pads)};
    if (value) inputs.push_back(*value);
    return Node("Pad", inputs, {out});
  }
  // Conv of `in` with random weights [c_out, c_in / group, kernel...] and bias; `pads` the conv's
  // own (none when empty).
  onnx::NodeProto* Conv(const std::string& in, int64_t c_in, int64_t c_out,
                        std::vector<int64_t> kernel, const std::string& out,
                        std::vector<int64_t> pads = {}, int64_t group = 1,
                        std::vector<int64_t> strides = {}) {
    std::vector<int64_t> w_dims = {c_out, c_in / group};
    w_dims.insert(w_dims.end(), kernel.begin(), kernel.end());
    auto* n = Node("Conv", {in, Random(out + "_w", w_dims), Random(out + "_b", {c_out})}, {out});
    if (!pads.empty()) IntsAttr(n, "pads", pads);
    if (group != 1) IntAttr(n, "group", group);
    if (!strides.empty()) IntsAttr(n, "strides", strides);
    return n;
  }
  void Output(const std::string& name) {
    auto* o = graph()->add_output();
    o->set_name(name);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  }
  Tensor Input() {
    Tensor t(TP::FLOAT, x_dims_);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng_);
    return t;
  }

 private:
  io::Model model_;
  std::vector<int64_t> x_dims_;
  std::mt19937 rng_{11};
};

// The op types a fused run of `session` executes.
std::multiset<std::string> OpsRun(Session& session, const Tensor& x) {
  std::multiset<std::string> ops;
  session.RunTimed({{"x", x}}, [&ops](const onnx::NodeProto& n) { ops.insert(n.op_type()); });
  return ops;
}

void ExpectSameBits(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b,
                    const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].value.shape(), b[i].value.shape()) << a[i].name;
    EXPECT_EQ(std::memcmp(a[i].value.raw(), b[i].value.raw(), a[i].value.bytes()), 0)
        << what << ": output " << a[i].name;
  }
}

// `g` fused folds `folds` Pads (and `tails` tail nodes), runs no Pad then, and gives the bits of
// the unfused session at 1 and 2 threads.
void ExpectFoldsExactly(PadGraph& g, int folds, int tails = 0) {
  const Tensor x = g.Input();
  std::vector<NamedTensor> first;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    Session fused(g.model(), {.threads = threads});
    Session plain(g.model(), {.threads = threads, .no_fusion = true});
    EXPECT_EQ(fused.fused_nodes(), folds + tails);
    const int pads_in_model = static_cast<int>(OpsRun(plain, x).count("Pad"));
    EXPECT_EQ(static_cast<int>(OpsRun(fused, x).count("Pad")), pads_in_model - folds);
    const auto a = fused.Run({{"x", x}});
    ExpectSameBits(a, plain.Run({{"x", x}}), "fused vs unfused");
    if (first.empty()) {
      first = a;
    } else {
      ExpectSameBits(a, first, "2 threads vs 1");
    }
  }
}

void ExpectNoFold(PadGraph& g) {
  Session fused(g.model());
  EXPECT_EQ(fused.fused_nodes(), 0);
  const Tensor x = g.Input();
  Session plain(g.model(), {.no_fusion = true});
  ExpectSameBits(fused.Run({{"x", x}}), plain.Run({{"x", x}}), "unfolded vs unfused");
}

TEST(PadConvFold, EverySpatialSideAsymmetricWithTheConvsOwnPads) {
  PadGraph g({1, 3, 9, 11}, 13);
  g.Pad("x", {0, 0, 1, 2, 0, 0, 3, 1}, "p");
  g.Conv("p", 3, 5, {3, 3}, "y", {1, 0, 0, 2});
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

TEST(PadConvFold, OneDimensionalConv) {
  PadGraph g({2, 4, 37}, 13);
  g.Pad("x", {0, 0, 2, 0, 0, 3}, "p");
  g.Conv("p", 4, 6, {5}, "y", {1, 1});
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// tf2onnx's "same" padding of a strided depthwise conv (M-LSD): one row and column at the end.
TEST(PadConvFold, DepthwiseStridedAsTf2onnxWritesIt) {
  PadGraph g({1, 8, 20, 20}, 11);
  g.Pad("x", {0, 0, 0, 0, 0, 0, 1, 1}, "p");
  g.Conv("p", 8, 8, {3, 3}, "y", {}, 8, {2, 2});
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

TEST(PadConvFold, DepthwiseGenericKernelWithOwnPads) {
  PadGraph g({1, 6, 13, 10}, 13);
  g.Pad("x", {0, 0, 2, 0, 0, 0, 1, 3}, "p");
  g.Conv("p", 6, 6, {4, 3}, "y", {1, 1, 0, 1}, 6);
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// Large enough for the Winograd path (WinogradPays: 16+ channels, a 32x32 output).
TEST(PadConvFold, WinogradConv) {
  PadGraph g({1, 16, 34, 33}, 13);
  g.Pad("x", {0, 0, 1, 0, 0, 0, 0, 2}, "p");
  g.Conv("p", 16, 16, {3, 3}, "y", {0, 1, 1, 0});
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// Unfused a pointwise GEMM over the padded input; folded, im2col + GEMM with the padding.
TEST(PadConvFold, PointwiseConvMovesToIm2col) {
  PadGraph g({1, 8, 12, 12}, 13);
  g.Pad("x", {0, 0, 1, 2, 0, 0, 2, 1}, "p");
  g.Conv("p", 8, 12, {1, 1}, "y");
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// Unfused the strided-signal GEMM (no padding, one channel); folded, im2col.
TEST(PadConvFold, StridedSignalConvMovesToIm2col) {
  PadGraph g({1, 1, 400}, 13);
  g.Pad("x", {0, 0, 0, 0, 0, 24}, "p");
  g.Conv("p", 1, 20, {64}, "y", {}, 1, {16});
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// A batch of small images, once wide (row pieces) and once narrow (C^T = col^T W^T).
TEST(PadConvFold, SmallImageBatches) {
  {
    PadGraph g({4, 3, 6, 5}, 13);
    g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 0}, "p");
    g.Conv("p", 3, 10, {3, 3}, "y");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
  {
    PadGraph g({2, 8, 2, 2}, 13);
    g.Pad("x", {0, 0, 1, 0, 0, 0, 0, 1}, "p");
    g.Conv("p", 8, 64, {2, 2}, "y");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
}

// The pads as a Constant node, as a Concat of a Split of an initializer (tf2onnx, M-LSD), as
// Pad-2's attribute, and with an explicit 0 or empty constant_value.
TEST(PadConvFold, PadsFromEverySource) {
  {
    PadGraph g({1, 2, 7, 7}, 13);
    auto* c = g.Node("Constant", {}, {"pads"});
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(AP::TENSOR);
    a->mutable_t()->set_data_type(TP::INT64);
    a->mutable_t()->add_dims(8);
    for (int64_t v : {0, 0, 1, 1, 0, 0, 1, 1}) a->mutable_t()->add_int64_data(v);
    g.Node("Pad", {"x", "pads"}, {"p"});
    g.Conv("p", 2, 3, {3, 3}, "y");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
  {
    PadGraph g({1, 2, 7, 7}, 11);
    // NHWC pads [0, 0, 1, 0, 0, 0, 2, 0] reordered to NCHW by a Split and a Concat.
    auto* split = g.Node("Split", {g.Ints("nhwc", {0, 1, 2, 0, 0, 3, 1, 0})},
                         {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"});
    PadGraph::IntsAttr(split, "split", {1, 1, 1, 1, 1, 1, 1, 1});
    auto* concat = g.Node("Concat", {"s0", "s3", "s1", "s2", "s4", "s7", "s5", "s6"}, {"pads"});
    PadGraph::IntAttr(concat, "axis", 0);
    g.Node("Pad", {"x", "pads"}, {"p"});
    g.Conv("p", 2, 3, {3, 3}, "y", {}, 1, {2, 2});
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
  {
    PadGraph g({1, 2, 7, 7}, 2);
    auto* pad = g.Node("Pad", {"x"}, {"p"});
    PadGraph::IntsAttr(pad, "pads", {0, 0, 2, 1, 0, 0, 0, 1});
    PadGraph::StringAttr(pad, "mode", "constant");
    PadGraph::FloatAttr(pad, "value", 0.f);
    g.Conv("p", 2, 3, {3, 3}, "y");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
  for (bool empty_value : {false, true}) {
    PadGraph g({1, 2, 7, 7}, 13);
    g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p",
          empty_value ? std::string() : g.Floats("zero", {}, {0.f}));
    g.Conv("p", 2, 3, {3, 3}, "y");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
}

// auto_pad VALID without pads: the conv's own pads are zero.
TEST(PadConvFold, ValidConv) {
  PadGraph g({1, 3, 8, 8}, 13);
  g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p");
  PadGraph::StringAttr(g.Conv("p", 3, 4, {3, 3}, "y"), "auto_pad", "VALID");
  g.Output("y");
  ExpectFoldsExactly(g, 1);
}

// The conv's Relu tail fuses as well: one conv step runs the Pad, the Conv and the Relu.
TEST(PadConvFold, WithAnEpilogueTail) {
  PadGraph g({1, 4, 10, 10}, 13);
  g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p");
  g.Conv("p", 4, 8, {3, 3}, "c");
  g.Node("Relu", {"c"}, {"y"});
  g.Output("y");
  ExpectFoldsExactly(g, 1, 1);
}

// The Pad's input stays alive until the conv when another node reads it last, between the Pad
// and the Conv (a graph input, and an intermediate); two Pads of one input fold each.
TEST(PadConvFold, PadInputLivesUntilTheConv) {
  {
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p");
    g.Node("Sigmoid", {"x"}, {"s"});
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("s");
    g.Output("y");
    ExpectFoldsExactly(g, 1);
  }
  {
    PadGraph g({1, 3, 8, 8}, 13);
    g.Node("Sigmoid", {"x"}, {"h"});
    g.Pad("h", {0, 0, 1, 0, 0, 0, 0, 1}, "p");
    g.Pad("h", {0, 0, 0, 2, 0, 0, 1, 0}, "q");
    g.Node("Neg", {"h"}, {"n"});
    g.Conv("q", 3, 4, {3, 3}, "z");
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("n");
    g.Output("y");
    g.Output("z");
    ExpectFoldsExactly(g, 2);
  }
}

// Observed runs see every tensor, the Pad's output included.
TEST(PadConvFold, ObservedRunsSeeThePad) {
  PadGraph g({1, 3, 8, 8}, 13);
  g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p");
  g.Conv("p", 3, 4, {3, 3}, "y");
  g.Output("y");
  Session session(g.model());
  ASSERT_EQ(session.fused_nodes(), 1);
  std::set<std::string> seen;
  session.Run({{"x", g.Input()}},
              [&seen](const std::string& name, const Tensor&) { seen.insert(name); });
  EXPECT_TRUE(seen.count("p"));
}

// A Pad input of another rank than its pads: the Pad runs and fails as it does unfused.
TEST(PadConvFold, InputOfAnotherRankFailsAtThePadAsUnfused) {
  PadGraph g({1, 3, 8, 8}, 13);
  g.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  g.Pad("x", {0, 0, 1, 1, 0, 0, 1, 1}, "p");
  g.Conv("p", 3, 4, {3, 3}, "y");
  g.Output("y");
  const Tensor x(TP::FLOAT, {1, 3, 8});
  std::string fused_error, plain_error;
  try {
    Session(g.model()).Run({{"x", x}});
  } catch (const Error& e) {
    fused_error = e.what();
  }
  try {
    Session(g.model(), {.no_fusion = true}).Run({{"x", x}});
  } catch (const Error& e) {
    plain_error = e.what();
  }
  EXPECT_NE(fused_error.find("'p'"), std::string::npos) << fused_error;
  EXPECT_EQ(fused_error, plain_error);
}

TEST(PadConvFold, WhatMustNotFold) {
  const std::vector<int64_t> spatial = {0, 0, 1, 1, 0, 0, 1, 1};
  auto pad_conv = [&](int opset, std::vector<int64_t> pads,
                      const std::function<void(PadGraph&, onnx::NodeProto*)>& edit) {
    PadGraph g({1, 3, 8, 8}, opset);
    auto* pad = g.Pad("x", pads, "p");
    edit(g, pad);
    g.Conv("p", pads[1] == 0 ? 3 : 3 + pads[1] + pads[5], 4, {3, 3}, "y");
    g.Output("y");
    ExpectNoFold(g);
  };
  const auto none = [](PadGraph&, onnx::NodeProto*) {};
  {
    SCOPED_TRACE("a non-zero fill");
    pad_conv(13, spatial,
             [](PadGraph& g, onnx::NodeProto* pad) { pad->add_input(g.Floats("one", {}, {1.f})); });
  }
  {
    SCOPED_TRACE("a -0.0 fill");
    pad_conv(13, spatial, [](PadGraph& g, onnx::NodeProto* pad) {
      pad->add_input(g.Floats("minus_zero", {}, {-0.f}));
    });
  }
  for (const char* mode : {"reflect", "edge"}) {
    SCOPED_TRACE(mode);
    pad_conv(13, spatial,
             [mode](PadGraph&, onnx::NodeProto* pad) { PadGraph::StringAttr(pad, "mode", mode); });
  }
  {
    SCOPED_TRACE("pads on C");
    pad_conv(13, {0, 1, 1, 1, 0, 1, 1, 1}, none);
  }
  {
    SCOPED_TRACE("negative pads");
    pad_conv(13, {0, 0, -1, 1, 0, 0, 1, 1}, none);
  }
  {
    SCOPED_TRACE("pads on N");
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", {1, 0, 1, 1, 0, 0, 1, 1}, "p");
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("y");
    ExpectNoFold(g);
  }
  {
    SCOPED_TRACE("a non-zero fill as Pad-2's value");
    PadGraph g({1, 3, 8, 8}, 2);
    auto* pad = g.Node("Pad", {"x"}, {"p"});
    PadGraph::IntsAttr(pad, "pads", spatial);
    PadGraph::FloatAttr(pad, "value", 0.5f);
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("y");
    ExpectNoFold(g);
  }
}

TEST(PadConvFold, WhatMustNotFoldAroundTheConv) {
  const std::vector<int64_t> spatial = {0, 0, 1, 1, 0, 0, 1, 1};
  {
    SCOPED_TRACE("the Pad's output read twice");
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", spatial, "p");
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Node("Relu", {"p"}, {"r"});
    g.Output("y");
    g.Output("r");
    ExpectNoFold(g);
  }
  {
    SCOPED_TRACE("the Pad's output a graph output");
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", spatial, "p");
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("y");
    g.Output("p");
    ExpectNoFold(g);
  }
  {
    SCOPED_TRACE("auto_pad SAME_UPPER");
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", spatial, "p");
    PadGraph::StringAttr(g.Conv("p", 3, 4, {3, 3}, "y"), "auto_pad", "SAME_UPPER");
    g.Output("y");
    ExpectNoFold(g);
  }
  {
    SCOPED_TRACE("pads that are a graph input");
    PadGraph g({1, 3, 8, 8}, 13);
    auto* in = g.graph()->add_input();
    in->set_name("pads");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(TP::INT64);
    g.Node("Pad", {"x", "pads"}, {"p"});
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("y");
    EXPECT_EQ(Session(g.model()).fused_nodes(), 0);
  }
  {
    SCOPED_TRACE("a 3-D conv");
    PadGraph g({1, 2, 4, 5, 6}, 13);
    g.Pad("x", {0, 0, 1, 1, 1, 0, 0, 1, 1, 1}, "p");
    g.Conv("p", 2, 3, {3, 3, 3}, "y");
    g.Output("y");
    ExpectNoFold(g);
  }
  for (const char* op : {"MaxPool", "AveragePool", "ConvTranspose"}) {
    SCOPED_TRACE(op);
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", spatial, "p");
    if (std::string(op) == "ConvTranspose") {
      g.Node(op, {"p", g.Random("w", {3, 2, 3, 3})}, {"y"});
    } else {
      PadGraph::IntsAttr(g.Node(op, {"p"}, {"y"}), "kernel_shape", {3, 3});
    }
    g.Output("y");
    ExpectNoFold(g);
  }
  {
    SCOPED_TRACE("a Conv kernel of the caller's");
    PadGraph g({1, 3, 8, 8}, 13);
    g.Pad("x", spatial, "p");
    g.Conv("p", 3, 4, {3, 3}, "y");
    g.Output("y");
    KernelRegistry registry = KernelRegistry::Default();
    const KernelFn conv = *registry.Find("", "Conv", 13);
    registry.Register("", "Conv", 1, 17, [conv](KernelContext& ctx) { conv(ctx); });
    EXPECT_EQ(Session(g.model(), {.registry = &registry}).fused_nodes(), 0);
  }
}

// Pad-18's axes input is not folded. The executor's Conv stops at opset 17, so the finder is
// asked directly, with every kernel taken as built-in.
TEST(PadConvFold, AxesInputIsNotFolded) {
  PadGraph g({1, 3, 8, 8}, 18);
  g.Node("Pad", {"x", "pads", "", "axes"}, {"p"});
  g.Node("Conv", {"p", "w"}, {"y"});
  ir::GraphView view(*g.graph());
  const std::vector<int> order = view.TopoOrder();
  std::unordered_map<std::string, Tensor> constants;
  auto ints = [](std::vector<int64_t> v) {
    Tensor t(TP::INT64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    return t;
  };
  constants["pads"] = ints({1, 1, 1, 1});
  constants["axes"] = ints({2, 3});
  constants["w"] = Tensor(TP::FLOAT, {4, 3, 3, 3});
  const auto folds =
      FindPadFolds(view, order, {18, 18}, constants, &g.model(), [](size_t) { return true; });
  EXPECT_EQ(folds[0], nullptr);
  // The same Pad without axes (pads for every axis) folds.
  g.graph()->mutable_node(0)->mutable_input()->RemoveLast();
  constants["pads"] = ints({0, 0, 1, 1, 0, 0, 1, 1});
  ir::GraphView plain(*g.graph());
  const auto folded =
      FindPadFolds(plain, order, {18, 18}, constants, &g.model(), [](size_t) { return true; });
  ASSERT_NE(folded[0], nullptr);
  EXPECT_EQ(folded[0]->conv_step, 1u);
  EXPECT_EQ(folded[0]->conv.input(0), "x");
}

// ONNX Runtime (which folds such Pads itself) computes the same conv.
TEST(PadConvFold, MatchesOnnxRuntime) {
  if (auto why = testing_util::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);
  PadGraph g({1, 8, 15, 15}, 13);
  g.Pad("x", {0, 0, 0, 1, 0, 0, 1, 0}, "p");
  g.Conv("p", 8, 8, {3, 3}, "y", {1, 0, 0, 1}, 8, {2, 2});
  g.Output("y");
  ASSERT_EQ(Session(g.model()).fused_nodes(), 1);
  testing_util::ExpectMatchesOrt(g.model().proto, {{"x", g.Input()}});
}

}  // namespace pad_fusion_test
}  // namespace porttool::runtime
