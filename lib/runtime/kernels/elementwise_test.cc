// Broadcasting binary ops over tensors large enough to be split across threads: rows are cut
// into segments, so a tensor times a scalar (a single row) is split too. Each element must be
// computed once, from the right operands, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime::testing_util {
namespace {

// a - b with numpy broadcasting, for a of shape [rows, cols] and b of [1], [cols] or [rows, 1].
std::vector<float> NaiveSub(const Tensor& a, const Tensor& b, int64_t rows, int64_t cols) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t bi = b.size() == 1 ? 0 : (b.size() == cols ? c : r);
      out.push_back(a.data<float>()[r * cols + c] - b.data<float>()[bi]);
    }
  }
  return out;
}

TEST(Broadcast, LargeOperandsSplitAcrossThreadsMatchNaive) {
  std::mt19937 rng(9);
  const int64_t rows = 3, cols = 70001;  // several segments per row, the last one short
  const Tensor a = RandomFloats({rows, cols}, rng);
  const std::vector<std::vector<int64_t>> b_shapes = {{1}, {cols}, {rows, 1}};
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (const auto& shape : b_shapes) {
      const Tensor b = RandomFloats(shape, rng);
      auto out = RunOp(NodeBuilder("Sub", 2).node(), 14, {&a, &b});
      ExpectClose(
          out[0], {rows, cols}, NaiveSub(a, b, rows, cols),
          "threads " + std::to_string(threads) + " b of rank " + std::to_string(shape.size()), 0);
      // And the other operand order, where the scalar comes first.
      auto flipped = RunOp(NodeBuilder("Sub", 2).node(), 14, {&b, &a});
      std::vector<float> negated = NaiveSub(a, b, rows, cols);
      for (float& v : negated) v = -v;
      ExpectClose(flipped[0], {rows, cols}, negated, "flipped", 0);
      if (HasFatalFailure()) return;
    }
  }
  SetNumThreads(0);
}

}  // namespace
}  // namespace porttool::runtime::testing_util

// ---- the float32 vector paths against scalar references ----
//
// Every float32 elementwise op runs through an 8-lane span (elementwise.cc). Each test runs the
// registered kernel over lengths that exercise the full vectors and the partial tail (1, 7, 8,
// 9, 63, 65, 1000) and compares every element with a scalar reference written as the generic
// (per-element) lambda computes it: bit for bit for the exact ops (NaN matches any NaN; -0 and
// +0 differ), within a few ulp of double precision for the transcendental ones.
namespace porttool::runtime::testing_util {
namespace {

const std::vector<int64_t> kLengths = {1, 7, 8, 9, 63, 65, 1000};
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Uniform values in [lo, hi) with `specials` dropped in at every 5th position starting at 0 and
// at the last position (so they land in vector lanes and in the tail).
std::vector<float> TestValues(int64_t n, std::mt19937& rng, float lo, float hi,
                              const std::vector<float>& specials) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  size_t k = rng() % std::max<size_t>(1, specials.size());
  for (int64_t i = 0; i < n && !specials.empty(); i += 5) v[i] = specials[k++ % specials.size()];
  if (!specials.empty()) v[n - 1] = specials[k % specials.size()];
  return v;
}

const std::vector<float> kSpecials = {kNaN,  -0.0f,  0.0f,    kInf,   -kInf,   1e-40f,   -1e-40f,
                                      1e30f, -1e30f, 1e-6f,   -1e-6f, 0.4999f, -0.4999f, 3.0f,
                                      -3.0f, 100.0f, -100.0f, 1.0f,   -1.0f};

bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// ulp distance between finite-or-infinite floats of the same sign class.
int64_t UlpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::abs(key(a) - key(b));
}

std::string Show(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Tensor Floats(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  return FloatTensor(shape, v);
}

Tensor Doubles(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  Tensor t(onnx::TensorProto::DOUBLE, shape);
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<double>()[i] = v[i];
  return t;
}

struct ExactUnary {
  std::string op;
  int opset;
  std::function<void(NodeBuilder&)> attrs;
  std::function<float(float)> ref;  // the generic lambda's arithmetic for a float
};

TEST(VectorPaths, ExactUnaryOpsMatchTheScalarLambdaBitForBit) {
  const float alpha = 0.1f, beta = 0.6f;
  const std::vector<ExactUnary> ops = {
      {"Relu", 14, {}, [](float v) { return v > 0 ? v : 0.0f; }},
      {"Abs", 13, {}, [](float v) { return v < 0 ? -v : v; }},
      {"Neg", 13, {}, [](float v) { return -v; }},
      {"Reciprocal", 13, {}, [](float v) { return 1 / v; }},
      {"Sqrt", 13, {}, [](float v) { return std::sqrt(v); }},
      {"Softsign", 1, {}, [](float v) { return v / (1 + std::abs(v)); }},
      {"LeakyRelu", 16, [&](NodeBuilder& b) { b.Float("alpha", alpha); },
       [&](float v) { return v >= 0 ? v : float(double(alpha) * v); }},
      {"ThresholdedRelu", 10, [&](NodeBuilder& b) { b.Float("alpha", beta); },
       [&](float v) { return v > double(beta) ? v : 0.0f; }},
      {"HardSigmoid", 6, [&](NodeBuilder& b) { b.Float("alpha", alpha).Float("beta", beta); },
       [&](float v) {
         const float t = float(double(alpha) * v) + beta;  // the product rounded, then the sum
         return std::max(0.0f, std::min(1.0f, t));
       }},
      {"HardSwish",
       14,
       {},
       [](float v) { return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f)); }},
  };
  std::mt19937 rng(3);
  for (const auto& op : ops) {
    NodeBuilder builder(op.op, 1);
    if (op.attrs) op.attrs(builder);
    for (int64_t n : kLengths) {
      const std::vector<float> in = TestValues(n, rng, -8.0f, 8.0f, kSpecials);
      const Tensor x = Floats({n}, in);
      const auto out = RunOp(builder.node(), op.opset, {&x});
      ASSERT_EQ(out[0].shape(), std::vector<int64_t>{n}) << op.op;
      const float* got = out[0].data<float>();
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(SameFloat(got[i], op.ref(in[i])))
            << op.op << " n=" << n << " x[" << i << "]=" << Show(in[i]) << ": " << Show(got[i])
            << " vs " << Show(op.ref(in[i]));
      }
      // The double path (the generic lambda) still gives the same values.
      const Tensor xd = Doubles({n}, in);
      const auto outd = RunOp(builder.node(), op.opset, {&xd});
      for (int64_t i = 0; i < n; ++i) {
        const double d = outd[0].data<double>()[i];
        if (std::isnan(d) && std::isnan(op.ref(in[i]))) continue;
        if (SameFloat(float(d), op.ref(in[i]))) continue;  // infinities and overflow too
        if (op.op == "Reciprocal" || op.op == "Sqrt" || op.op == "Softsign" ||
            op.op == "HardSigmoid" || op.op == "HardSwish") {
          ASSERT_NEAR(d, op.ref(in[i]), 1e-6 * (1 + std::abs(d))) << op.op << " double";
        } else if (!std::isnan(d)) {
          ASSERT_EQ(float(d), op.ref(in[i])) << op.op << " double x=" << Show(in[i]);
        }
      }
    }
  }
}

struct ApproxUnary {
  std::string op;
  int opset;
  std::function<void(NodeBuilder&)> attrs;
  std::function<double(double)> ref;
  float lo, hi;  // random inputs range
  int64_t max_ulp;
  double abs_floor;  // differences below this pass (results near 0, subnormals)
};

TEST(VectorPaths, TranscendentalUnaryOpsStayWithinAFewUlp) {
  const double a = 1.3, g = 1.05070102214813232421875, sa = 1.67326319217681884765625;
  const std::vector<ApproxUnary> ops = {
      {"Exp", 13, {}, [](double v) { return std::exp(v); }, -90.f, 90.f, 2, 1.2e-38},
      {"Log", 13, {}, [](double v) { return std::log(v); }, 0.0f, 1e6f, 2, 0},
      {"Tanh", 13, {}, [](double v) { return std::tanh(v); }, -10.f, 10.f, 6, 0},
      {"Sigmoid", 13, {}, [](double v) { return 1 / (1 + std::exp(-v)); }, -20.f, 20.f, 4, 1e-37},
      {"Erf", 13, {}, [](double v) { return std::erf(v); }, -5.f, 5.f, 8, 1e-37},
      {"Softplus",
       1,
       {},
       [](double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); },
       -20.f,
       20.f,
       4,
       1e-37},
      {"Elu", 6, [&](NodeBuilder& b) { b.Float("alpha", float(a)); },
       [&](double v) { return v >= 0 ? v : double(float(a)) * std::expm1(v); }, -6.f, 6.f, 4, 0},
      {"Selu",
       6,
       {},
       [&](double v) { return v > 0 ? g * v : g * sa * std::expm1(v); },
       -6.f,
       6.f,
       4,
       0},
      {"Celu", 12, [&](NodeBuilder& b) { b.Float("alpha", float(a)); },
       [&](double v) {
         const double al = double(float(a));
         return std::max(0.0, v) + std::min(0.0, al * std::expm1(v / al));
       },
       -6.f, 6.f, 4, 0},
  };
  std::mt19937 rng(5);
  for (const auto& op : ops) {
    NodeBuilder builder(op.op, 1);
    if (op.attrs) op.attrs(builder);
    for (int64_t n : kLengths) {
      const std::vector<float> in = TestValues(n, rng, op.lo, op.hi, kSpecials);
      const Tensor x = Floats({n}, in);
      const auto out = RunOp(builder.node(), op.opset, {&x});
      const float* got = out[0].data<float>();
      for (int64_t i = 0; i < n; ++i) {
        float want = static_cast<float>(op.ref(in[i]));
        // Celu(NaN) is 0 in the generic lambda (std::max/min drop the NaN); keep that.
        if (op.op == "Celu" && std::isnan(in[i])) want = 0.0f;
        const std::string what = op.op + " n=" + std::to_string(n) + " x=" + Show(in[i]) + ": " +
                                 Show(got[i]) + " vs " + Show(want);
        if (std::isnan(want) || std::isinf(want)) {
          ASSERT_TRUE(SameFloat(got[i], want)) << what;
          continue;
        }
        if (std::abs(double(got[i]) - want) <= op.abs_floor) continue;
        ASSERT_LE(UlpDistance(got[i], want), op.max_ulp) << what;
      }
    }
  }
}

// The reference broadcast: out[idx] = f(a[idx'], b[idx'']) by numpy rules, rank <= 4.
std::vector<int64_t> BroadcastOf(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = std::max(a[i], b[i]);
  return out;
}

// The element of a tensor of `shape` that output index `flat` of `out` reads.
int64_t SourceIndex(const std::vector<int64_t>& shape, const std::vector<int64_t>& out,
                    int64_t flat) {
  const size_t lead = out.size() - shape.size();
  int64_t index = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (d >= lead) {
      const int64_t dim = shape[d - lead];
      if (dim != 1) index += coord * stride;
      stride *= dim;
    }
  }
  return index;
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Shape pairs: same shape, scalar either side, per-channel [1,C,1] against [N,C,L], a row and a
// column (both broadcast), and a middle-axis broadcast; the inner lengths cover the tails.
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ShapePairs() {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  for (int64_t n : kLengths) {
    pairs.push_back({{n}, {n}});
    pairs.push_back({{n}, {1}});
    pairs.push_back({{1}, {n}});
    pairs.push_back({{2, 3, n}, {1, 3, 1}});
    pairs.push_back({{1, 3, 1}, {2, 3, n}});
    pairs.push_back({{2, 3, n}, {2, 1, n}});
    pairs.push_back({{3, 1}, {1, n}});
    pairs.push_back({{2, 3, n}, {n}});
  }
  return pairs;
}

// ShapePairs and rank-4 ones: a conv net's per-channel floor over short planes (widened into
// long rows), and a walk over three outer dims, a broadcast one between them, whose odometer
// carries twice. (Where's [1,3,1] condition does not broadcast against these.)
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> BinaryShapePairs() {
  auto pairs = ShapePairs();
  for (int64_t n : kLengths) {
    pairs.push_back({{2, 3, n, 1}, {1, 3, 1, 1}});
    pairs.push_back({{1, 3, 1, 1}, {2, 3, n, 1}});
    pairs.push_back({{3, 2, 3, n}, {3, 1, 3, 1}});
  }
  return pairs;
}

TEST(VectorPaths, BroadcastingBinaryOpsMatchTheScalarLambdaBitForBit) {
  struct Binary {
    std::string op;
    int opset;
    std::function<float(float, float)> ref;
  };
  const std::vector<Binary> ops = {
      {"Add", 14, [](float x, float y) { return x + y; }},
      {"Sub", 14, [](float x, float y) { return x - y; }},
      {"Mul", 14, [](float x, float y) { return x * y; }},
      {"Div", 14, [](float x, float y) { return x / y; }},
      {"PRelu", 16, [](float x, float s) { return x < 0 ? x * s : x; }},
      // The generic lambdas: a NaN first operand wins, a NaN second one loses; ties keep x.
      {"Max", 13, [](float x, float y) { return std::isnan(x) ? x : (x < y ? y : x); }},
      {"Min", 13, [](float x, float y) { return std::isnan(x) ? x : (y < x ? y : x); }},
      {"Sum", 13, [](float x, float y) { return x + y; }},
      {"Mean", 13, [](float x, float y) { return (x + y) / 2.0f; }},
  };
  std::mt19937 rng(11);
  for (const auto& op : ops) {
    for (const auto& [sa, sb] : BinaryShapePairs()) {
      const std::vector<float> va = TestValues(Count(sa), rng, -4.0f, 4.0f, kSpecials);
      const std::vector<float> vb = TestValues(Count(sb), rng, -4.0f, 4.0f, kSpecials);
      const Tensor a = Floats(sa, va), b = Floats(sb, vb);
      const auto out = RunOp(NodeBuilder(op.op, 2).node(), op.opset, {&a, &b});
      const std::vector<int64_t> shape = BroadcastOf(sa, sb);
      ASSERT_EQ(out[0].shape(), shape) << op.op;
      const float* got = out[0].data<float>();
      for (int64_t i = 0; i < Count(shape); ++i) {
        const float x = va[SourceIndex(sa, shape, i)], y = vb[SourceIndex(sb, shape, i)];
        ASSERT_TRUE(SameFloat(got[i], op.ref(x, y)))
            << op.op << " shapes " << a.DebugString() << " " << b.DebugString() << " element " << i
            << ": " << Show(x) << ", " << Show(y) << " -> " << Show(got[i]) << " vs "
            << Show(op.ref(x, y));
      }
    }
  }
}

TEST(VectorPaths, VariadicFoldsThreeInputsInOrder) {
  std::mt19937 rng(13);
  for (int64_t n : kLengths) {
    const std::vector<float> v0 = TestValues(n, rng, -4, 4, kSpecials);
    const std::vector<float> v1 = TestValues(1, rng, -4, 4, kSpecials);
    const std::vector<float> v2 = TestValues(n, rng, -4, 4, kSpecials);
    const Tensor a = Floats({n}, v0), b = Floats({1}, v1), c = Floats({1, n}, v2);
    for (const std::string op : {"Sum", "Max", "Min", "Mean"}) {
      const auto out = RunOp(NodeBuilder(op, 3).node(), 13, {&a, &b, &c});
      ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, n}));
      for (int64_t i = 0; i < n; ++i) {
        auto f = [&](float x, float y) {
          if (op == "Max") return std::isnan(x) ? x : (x < y ? y : x);
          if (op == "Min") return std::isnan(x) ? x : (y < x ? y : x);
          return x + y;
        };
        float want = f(f(v0[i], v1[0]), v2[i]);
        if (op == "Mean") want /= 3.0f;
        ASSERT_TRUE(SameFloat(out[0].data<float>()[i], want)) << op << " n=" << n << " " << i;
      }
    }
  }
}

TEST(VectorPaths, PowWithAConstantExponent) {
  std::mt19937 rng(17);
  for (float e : {2.0f, 0.5f, 0.0f, 1.0f, 3.0f}) {
    for (int64_t n : kLengths) {
      const std::vector<float> in = TestValues(n, rng, -3.0f, 3.0f, kSpecials);
      const Tensor x = Floats({n}, in);
      const Tensor y = Floats({}, {e});
      const auto out = RunOp(NodeBuilder("Pow", 2).node(), 15, {&x, &y});
      ASSERT_EQ(out[0].shape(), std::vector<int64_t>{n});
      for (int64_t i = 0; i < n; ++i) {
        const float got = out[0].data<float>()[i], want = std::pow(in[i], e);
        const std::string what =
            "x=" + Show(in[i]) + " e=" + Show(e) + ": " + Show(got) + " vs " + Show(want);
        if (e == 2.0f) {  // x * x, the correctly rounded square
          ASSERT_TRUE(SameFloat(got, float(double(in[i]) * in[i]))) << what;
        } else if (e == 0.5f && std::isfinite(want) && want != 0) {
          ASSERT_LE(UlpDistance(got, want), 1) << what;  // sqrt vs powf's last bit
          ASSERT_TRUE(SameFloat(got, float(std::sqrt(double(in[i]))))) << what;
        } else {
          ASSERT_TRUE(SameFloat(got, want)) << what;  // specials, 0, 1 and the libm path (3)
        }
      }
    }
  }
  // A [1]-shaped exponent against a rank-0 base: the output takes the broadcast rank.
  const Tensor x = Floats({}, {3.0f}), y = Floats({1, 1}, {2.0f});
  const auto out = RunOp(NodeBuilder("Pow", 2).node(), 15, {&x, &y});
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(out[0].data<float>()[0], 9.0f);
}

TEST(VectorPaths, ClipBothOpsets) {
  std::mt19937 rng(19);
  for (int64_t n : kLengths) {
    const std::vector<float> in = TestValues(n, rng, -8.0f, 8.0f, kSpecials);
    const Tensor x = Floats({n}, in);
    const float lo = -0.5f, hi = 6.0f;
    auto ref = [](float v, float l, float h) { return std::min(std::max(v, l), h); };
    const auto old =
        RunOp(NodeBuilder("Clip", 1).Float("min", lo).Float("max", hi).node(), 6, {&x});
    const Tensor tl = Floats({}, {lo}), th = Floats({}, {hi});
    const auto both = RunOp(NodeBuilder("Clip", 3).node(), 13, {&x, &tl, &th});
    const auto only_min = RunOp(NodeBuilder("Clip", 2).node(), 13, {&x, &tl});
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(SameFloat(old[0].data<float>()[i], ref(in[i], lo, hi))) << Show(in[i]);
      ASSERT_TRUE(SameFloat(both[0].data<float>()[i], ref(in[i], lo, hi))) << Show(in[i]);
      ASSERT_TRUE(SameFloat(only_min[0].data<float>()[i],
                            ref(in[i], lo, std::numeric_limits<float>::max())))
          << Show(in[i]);
    }
  }
}

template <typename T>
Tensor Typed(int32_t dtype, const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<T>()[i] = static_cast<T>(rng() % 1000);
  return t;
}

template <typename T>
void CheckWhere(int32_t dtype, std::mt19937& rng) {
  const std::vector<std::vector<int64_t>> cond_shapes = {{}, {1}, {1, 3, 1}};
  for (const auto& [sx, sy] : ShapePairs()) {
    for (auto sc : cond_shapes) {
      if (sc.empty()) sc = BroadcastOf(sx, sy);  // a full-size condition too
      Tensor c(onnx::TensorProto::BOOL, sc);
      for (int64_t i = 0; i < c.size(); ++i) c.mutable_data<bool>()[i] = rng() % 2;
      const Tensor x = Typed<T>(dtype, sx, rng), y = Typed<T>(dtype, sy, rng);
      const auto out = RunOp(NodeBuilder("Where", 3).node(), 16, {&c, &x, &y});
      const std::vector<int64_t> shape = BroadcastOf(BroadcastOf(sc, sx), sy);
      ASSERT_EQ(out[0].shape(), shape);
      for (int64_t i = 0; i < Count(shape); ++i) {
        const bool k = c.data<bool>()[SourceIndex(sc, shape, i)];
        const T want =
            k ? x.data<T>()[SourceIndex(sx, shape, i)] : y.data<T>()[SourceIndex(sy, shape, i)];
        ASSERT_EQ(out[0].data<T>()[i], want)
            << "dtype " << dtype << " " << c.DebugString() << " " << x.DebugString() << " "
            << y.DebugString() << " " << i;
      }
    }
  }
}

TEST(VectorPaths, WhereSelectsEveryTypeWithBroadcasting) {
  std::mt19937 rng(23);
  CheckWhere<float>(onnx::TensorProto::FLOAT, rng);
  CheckWhere<int32_t>(onnx::TensorProto::INT32, rng);
  CheckWhere<double>(onnx::TensorProto::DOUBLE, rng);
  CheckWhere<int64_t>(onnx::TensorProto::INT64, rng);
  CheckWhere<uint8_t>(onnx::TensorProto::UINT8, rng);
  CheckWhere<int16_t>(onnx::TensorProto::INT16, rng);
}

TEST(VectorPaths, FloatWhereKeepsNaNAndSignedZeroBits) {
  const Tensor x = Floats({9}, {kNaN, -0.0f, 0.0f, kInf, -kInf, 1, 2, 3, -0.0f});
  const Tensor y = Floats({9}, {0, 0, -0.0f, 0, 0, kNaN, 0, 0, 0.0f});
  Tensor c(onnx::TensorProto::BOOL, {9});
  for (int i = 0; i < 9; ++i) c.mutable_data<bool>()[i] = i != 5;
  const auto out = RunOp(NodeBuilder("Where", 3).node(), 16, {&c, &x, &y});
  for (int i = 0; i < 9; ++i) {
    const float want = i != 5 ? x.data<float>()[i] : y.data<float>()[i];
    EXPECT_TRUE(SameFloat(out[0].data<float>()[i], want)) << i;
  }
}

// Large operands split across threads: each segment of the float spans is computed once.
TEST(VectorPaths, LargeBroadcastsSplitAcrossThreads) {
  std::mt19937 rng(29);
  const int64_t rows = 3, cols = 70001;
  const Tensor a = RandomFloats({rows, cols}, rng);
  const Tensor b = RandomFloats({rows, 1}, rng);
  Tensor c(onnx::TensorProto::BOOL, {1, cols});
  for (int64_t i = 0; i < cols; ++i) c.mutable_data<bool>()[i] = rng() % 2;
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    const auto mx = RunOp(NodeBuilder("Max", 2).node(), 13, {&a, &b});
    const auto wh = RunOp(NodeBuilder("Where", 3).node(), 16, {&c, &a, &b});
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < cols; ++i) {
        const float x = a.data<float>()[r * cols + i], y = b.data<float>()[r];
        ASSERT_EQ(mx[0].data<float>()[r * cols + i], x < y ? y : x) << threads;
        ASSERT_EQ(wh[0].data<float>()[r * cols + i], c.data<bool>()[i] ? x : y) << threads;
      }
    }
  }
  SetNumThreads(0);
}

}  // namespace
}  // namespace porttool::runtime::testing_util
