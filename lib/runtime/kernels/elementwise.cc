// Elementwise kernels: unary math and activations, broadcasting binary arithmetic, comparison
// and logic, Where, Cast/CastLike, Clip (attribute and input forms), variadic Max/Min/Sum/Mean.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"
#include "lib/runtime/tensor_io.h"

namespace porttool::runtime {
namespace {

// -v as ONNX Runtime and numpy compute it: the most negative integer negates to itself (two's
// complement wrap) instead of overflowing, which is undefined behaviour in C++.
template <typename T>
T WrappingNegate(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
  } else {
    return T(-v);
  }
}

using namespace kernels;  // NOLINT: the helpers are this file's vocabulary

template <typename T, typename F>
void MapInto(const Tensor& x, Tensor& y, F f) {
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  ParallelElements(x.size(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = static_cast<T>(f(px[i]));
  });
}

// A unary kernel over the types `Dispatch` accepts. `make_op(ctx)` reads the attributes and
// returns a generic lambda applied to every element.
template <typename DispatchFn, typename MakeOp>
KernelFn UnaryKernel(std::vector<std::string> attrs, DispatchFn dispatch, MakeOp make_op) {
  return [attrs, dispatch, make_op](KernelContext& ctx) {
    ctx.AllowAttributes(attrs);
    const Tensor& x = ctx.input(0);
    auto op = make_op(ctx);
    dispatch(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Tensor y = Tensor::Uninitialized(x.dtype(), x.shape());
      MapInto<T>(x, y, [&](T v) { return op(v); });
      ctx.output(0) = std::move(y);
    });
  };
}

struct FloatTypes {
  template <typename Fn>
  void operator()(const KernelContext& c, int32_t d, Fn&& f) const {
    DispatchFloat(c, d, f);
  }
};
struct SignedTypes {
  template <typename Fn>
  void operator()(const KernelContext& c, int32_t d, Fn&& f) const {
    DispatchSigned(c, d, f);
  }
};
struct NumericTypes {
  template <typename Fn>
  void operator()(const KernelContext& c, int32_t d, Fn&& f) const {
    DispatchNumeric(c, d, f);
  }
};

template <typename F>
auto NoAttrs(F f) {
  return [f](const KernelContext&) { return f; };
}

void RegisterFloatUnary(KernelRegistry& r, const char* name, auto f) {
  r.Register("", name, 1, kLatest, UnaryKernel({}, FloatTypes{}, NoAttrs(f)));
}

// Erf and Sigmoid over float32 through the vectorised Erf8/Exp8 (vector_math.h); double
// keeps the libm function.
using FloatSpan = void (*)(const float*, float*, int64_t);
PORTTOOL_SIMD_CLONES void ErfSpan(const float* x, float* y, int64_t n) {
  Map8(x, y, n, [](V8f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return Erf8(v); });
}
PORTTOOL_SIMD_CLONES void SigmoidSpan(const float* x, float* y, int64_t n) {
  Map8(x, y, n, [](V8f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return Sigmoid8(v); });
}

void RegisterVectorisedUnary(KernelRegistry& r, const char* name, FloatSpan span, auto generic) {
  const KernelFn other_types = UnaryKernel({}, FloatTypes{}, NoAttrs(generic));
  r.Register("", name, 1, kLatest, [span, other_types](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != TP::FLOAT) return other_types(ctx);
    ctx.AllowAttributes({});
    Tensor y = Tensor::Uninitialized(x.dtype(), x.shape());
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    ParallelElements(x.size(), [&](int64_t b, int64_t e) { span(px + b, py + b, e - b); });
    ctx.output(0) = std::move(y);
  });
}

void RegisterUnaryOps(KernelRegistry& r) {
  RegisterVectorisedUnary(r, "Sigmoid", SigmoidSpan, [](auto v) { return 1 / (1 + std::exp(-v)); });
  RegisterFloatUnary(r, "Tanh", [](auto v) { return std::tanh(v); });
  RegisterVectorisedUnary(r, "Erf", ErfSpan, [](auto v) { return std::erf(v); });
  RegisterFloatUnary(r, "Sqrt", [](auto v) { return std::sqrt(v); });
  RegisterFloatUnary(r, "Exp", [](auto v) { return std::exp(v); });
  RegisterFloatUnary(r, "Log", [](auto v) { return std::log(v); });
  RegisterFloatUnary(r, "Reciprocal", [](auto v) { return 1 / v; });
  RegisterFloatUnary(r, "Floor", [](auto v) { return std::floor(v); });
  RegisterFloatUnary(r, "Ceil", [](auto v) { return std::ceil(v); });
  // nearbyint in the default rounding mode is round-half-to-even, as ONNX specifies.
  RegisterFloatUnary(r, "Round", [](auto v) { return std::nearbyint(v); });
  RegisterFloatUnary(r, "Sin", [](auto v) { return std::sin(v); });
  RegisterFloatUnary(r, "Cos", [](auto v) { return std::cos(v); });
  RegisterFloatUnary(r, "Tan", [](auto v) { return std::tan(v); });
  RegisterFloatUnary(r, "Asin", [](auto v) { return std::asin(v); });
  RegisterFloatUnary(r, "Acos", [](auto v) { return std::acos(v); });
  RegisterFloatUnary(r, "Atan", [](auto v) { return std::atan(v); });
  RegisterFloatUnary(r, "Sinh", [](auto v) { return std::sinh(v); });
  RegisterFloatUnary(r, "Cosh", [](auto v) { return std::cosh(v); });
  RegisterFloatUnary(r, "Asinh", [](auto v) { return std::asinh(v); });
  RegisterFloatUnary(r, "Acosh", [](auto v) { return std::acosh(v); });
  RegisterFloatUnary(r, "Atanh", [](auto v) { return std::atanh(v); });
  RegisterFloatUnary(r, "Softsign", [](auto v) { return v / (1 + std::abs(v)); });
  RegisterFloatUnary(r, "Softplus", [](auto v) {
    // log(1 + e^v) without overflow for large v.
    return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  });
  RegisterFloatUnary(r, "HardSwish", [](auto v) {
    using T = decltype(v);
    return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
  });
  r.Register(
      "", "Relu", 1, kLatest,
      UnaryKernel({}, SignedTypes{}, NoAttrs([](auto v) { return v > 0 ? v : decltype(v)(0); })));
  r.Register("", "Abs", 1, kLatest, UnaryKernel({}, NumericTypes{}, NoAttrs([](auto v) {
                                                  if constexpr (std::is_signed_v<decltype(v)>) {
                                                    return v < 0 ? WrappingNegate(v) : v;
                                                  } else {
                                                    return v;
                                                  }
                                                })));
  r.Register("", "Neg", 1, kLatest,
             UnaryKernel({}, SignedTypes{}, NoAttrs([](auto v) { return WrappingNegate(v); })));
  r.Register("", "Sign", 9, kLatest, UnaryKernel({}, NumericTypes{}, NoAttrs([](auto v) {
                                                   using T = decltype(v);
                                                   return T((T(0) < v) - (v < T(0)));
                                                 })));
}

void RegisterActivations(KernelRegistry& r) {
  r.Register("", "LeakyRelu", 1, kLatest,
             UnaryKernel({"alpha"}, FloatTypes{}, [](const KernelContext& c) {
               double a = c.GetFloat("alpha", 0.01f);
               return [a](auto v) { return v >= 0 ? v : decltype(v)(a * v); };
             }));
  r.Register("", "HardSigmoid", 1, kLatest,
             UnaryKernel({"alpha", "beta"}, FloatTypes{}, [](const KernelContext& c) {
               float a = c.GetFloat("alpha", 0.2f), b = c.GetFloat("beta", 0.5f);
               return [a, b](auto v) {
                 using T = decltype(v);
                 return std::max(T(0), std::min(T(1), T(a) * v + T(b)));
               };
             }));
  r.Register("", "Elu", 1, kLatest,
             UnaryKernel({"alpha"}, FloatTypes{}, [](const KernelContext& c) {
               double a = c.GetFloat("alpha", 1.0f);
               return [a](auto v) { return v >= 0 ? v : decltype(v)(a * std::expm1(v)); };
             }));
  r.Register("", "Celu", 12, kLatest,
             UnaryKernel({"alpha"}, FloatTypes{}, [](const KernelContext& c) {
               double a = c.GetFloat("alpha", 1.0f);
               return [a](auto v) {
                 using T = decltype(v);
                 return std::max(T(0), v) + std::min(T(0), T(a * std::expm1(v / a)));
               };
             }));
  r.Register("", "Selu", 1, kLatest,
             UnaryKernel({"alpha", "gamma"}, FloatTypes{}, [](const KernelContext& c) {
               double a = c.GetFloat("alpha", 1.67326319217681884765625f);
               double g = c.GetFloat("gamma", 1.05070102214813232421875f);
               return [a, g](auto v) { return decltype(v)(v > 0 ? g * v : g * a * std::expm1(v)); };
             }));
  r.Register("", "ThresholdedRelu", 10, kLatest,
             UnaryKernel({"alpha"}, FloatTypes{}, [](const KernelContext& c) {
               double a = c.GetFloat("alpha", 1.0f);
               return [a](auto v) { return v > a ? v : decltype(v)(0); };
             }));
}

// ---- binary ----

// Input 1, adjusted for the opset < 7 broadcast/axis attributes; checks attributes.
Tensor SecondOperand(const KernelContext& ctx, std::vector<std::string> attrs) {
  if (ctx.opset() >= 7) {
    ctx.AllowAttributes(attrs);
    return ctx.input(1);
  }
  attrs.insert(attrs.end(), {"broadcast", "axis"});
  ctx.AllowAttributes(attrs);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  // Opset < 7 PRelu: a 1-D slope is per channel (axis 1).
  if (ctx.node().op_type() == "PRelu" && b.rank() == 1 && a.rank() >= 2 && b.size() == a.dim(1) &&
      b.size() != a.dim(a.rank() - 1)) {
    std::vector<int64_t> shape(a.rank() - 1, 1);
    shape[0] = b.size();
    return b.Reshaped(shape);
  }
  return LegacyBroadcastOperand(ctx, a, b);
}

template <typename DispatchFn, typename Op>
KernelFn BinaryKernel(std::vector<std::string> attrs, DispatchFn dispatch, Op op) {
  return [attrs, dispatch, op](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    Tensor b = SecondOperand(ctx, attrs);
    if (a.dtype() != b.dtype()) {
      ctx.Fail(
          fmt::format("inputs have different types: {} and {}", a.DebugString(), b.DebugString()));
    }
    Tensor out = Tensor::Uninitialized(a.dtype(), BroadcastShape(ctx, {&a, &b}));
    dispatch(ctx, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      BinaryBroadcast<T, T, T>(a, b, out, [&](T x, T y) { return static_cast<T>(op(x, y)); });
    });
    ctx.output(0) = std::move(out);
  };
}

template <typename T>
T IntMod(T a, T b) {
  if (b == 0) return 0;
  T m = static_cast<T>(a % b);
  if constexpr (std::is_signed_v<T>) {
    if (m != 0 && ((m < 0) != (b < 0))) m = static_cast<T>(m + b);
  }
  return m;
}

void RegisterModKernel(KernelRegistry& r) {
  r.Register("", "Mod", 10, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({"fmod"});
    bool fmod = ctx.GetInt("fmod", 0) != 0;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor out(a.dtype(), BroadcastShape(ctx, {&a, &b}));
    DispatchNumeric(ctx, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) {
        if (!fmod) ctx.Fail("Mod of floating-point inputs requires fmod=1 (ONNX spec)");
        BinaryBroadcast<T, T, T>(a, b, out, [](T x, T y) { return std::fmod(x, y); });
      } else if (fmod) {
        BinaryBroadcast<T, T, T>(a, b, out, [](T x, T y) { return y == 0 ? T(0) : T(x % y); });
      } else {
        BinaryBroadcast<T, T, T>(a, b, out, [](T x, T y) { return IntMod(x, y); });
      }
    });
    ctx.output(0) = std::move(out);
  });
}

void RegisterPow(KernelRegistry& r) {
  r.Register("", "Pow", 1, kLatest, [](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    Tensor b = SecondOperand(ctx, {});
    Tensor out(a.dtype(), BroadcastShape(ctx, {&a, &b}));
    DispatchNumeric(ctx, a.dtype(), [&](auto ta) {
      using A = decltype(ta);
      DispatchNumeric(ctx, b.dtype(), [&](auto tb) {
        using B = decltype(tb);
        BinaryBroadcast<A, B, A>(a, b, out, [](A x, B y) {
          if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
            return std::pow(x, y);
          } else {
            // An integer power past the type (or NaN/inf from a float exponent) saturates like
            // Cast instead of an undefined float->int conversion (fuzz_executor, issue 27).
            return SaturateCast<A>(std::pow(static_cast<double>(x), static_cast<double>(y)));
          }
        });
      });
    });
    ctx.output(0) = std::move(out);
  });
}

void RegisterArithmetic(KernelRegistry& r) {
  r.Register("", "Add", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::plus<>()));
  r.Register("", "Sub", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::minus<>()));
  r.Register("", "Mul", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::multiplies<>()));
  r.Register("", "Div", 1, kLatest, BinaryKernel({}, NumericTypes{}, [](auto x, auto y) {
               if constexpr (std::is_integral_v<decltype(x)>) {
                 return y == 0 ? decltype(x)(0) : decltype(x)(x / y);
               } else {
                 return x / y;
               }
             }));
  // PRelu's slope broadcasts to X (unidirectional); the multidirectional broadcast covers it.
  r.Register("", "PRelu", 1, kLatest, BinaryKernel({}, SignedTypes{}, [](auto x, auto s) {
               return x < 0 ? decltype(x)(x * s) : x;
             }));
  RegisterModKernel(r);
  RegisterPow(r);
}

// Comparison and logic produce bool.
template <typename DispatchFn, typename Op>
KernelFn PredicateKernel(DispatchFn dispatch, Op op) {
  return [dispatch, op](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    Tensor b = SecondOperand(ctx, {});
    if (a.dtype() != b.dtype()) {
      ctx.Fail(
          fmt::format("inputs have different types: {} and {}", a.DebugString(), b.DebugString()));
    }
    Tensor out(TP::BOOL, BroadcastShape(ctx, {&a, &b}));
    dispatch(ctx, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      BinaryBroadcast<T, T, bool>(a, b, out, op);
    });
    ctx.output(0) = std::move(out);
  };
}

struct AllTypes {
  template <typename Fn>
  void operator()(const KernelContext& c, int32_t d, Fn&& f) const {
    DispatchAll(c, d, f);
  }
};
struct BoolType {
  template <typename Fn>
  void operator()(const KernelContext& c, int32_t d, Fn&& f) const {
    if (d != TP::BOOL) FailDtype(c, d);
    f(bool{});
  }
};

void RegisterComparison(KernelRegistry& r) {
  r.Register("", "Equal", 1, kLatest, PredicateKernel(AllTypes{}, std::equal_to<>()));
  r.Register("", "Less", 1, kLatest, PredicateKernel(NumericTypes{}, std::less<>()));
  r.Register("", "Greater", 1, kLatest, PredicateKernel(NumericTypes{}, std::greater<>()));
  r.Register("", "LessOrEqual", 12, kLatest, PredicateKernel(NumericTypes{}, std::less_equal<>()));
  r.Register("", "GreaterOrEqual", 12, kLatest,
             PredicateKernel(NumericTypes{}, std::greater_equal<>()));
  r.Register("", "And", 1, kLatest,
             PredicateKernel(BoolType{}, [](bool x, bool y) { return x && y; }));
  r.Register("", "Or", 1, kLatest,
             PredicateKernel(BoolType{}, [](bool x, bool y) { return x || y; }));
  r.Register("", "Xor", 1, kLatest,
             PredicateKernel(BoolType{}, [](bool x, bool y) { return x != y; }));
  r.Register("", "Not", 1, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({});
    const Tensor& x = ctx.input(0);
    if (x.dtype() != TP::BOOL) FailDtype(ctx, x.dtype());
    Tensor y(TP::BOOL, x.shape());
    MapInto<bool>(x, y, [](bool v) { return !v; });
    ctx.output(0) = std::move(y);
  });
  auto is_nan = [](KernelContext& ctx) {
    ctx.AllowAttributes({});
    const Tensor& x = ctx.input(0);
    Tensor y(TP::BOOL, x.shape());
    DispatchFloat(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < x.size(); ++i) y.mutable_data<bool>()[i] = std::isnan(x.data<T>()[i]);
    });
    ctx.output(0) = std::move(y);
  };
  r.Register("", "IsNaN", 9, kLatest, is_nan);
  r.Register("", "IsInf", 10, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({"detect_negative", "detect_positive"});
    bool neg = ctx.GetInt("detect_negative", 1), pos = ctx.GetInt("detect_positive", 1);
    const Tensor& x = ctx.input(0);
    Tensor y(TP::BOOL, x.shape());
    DispatchFloat(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < x.size(); ++i) {
        T v = x.data<T>()[i];
        y.mutable_data<bool>()[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
      }
    });
    ctx.output(0) = std::move(y);
  });
}

void RegisterWhere(KernelRegistry& r) {
  r.Register("", "Where", 9, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({});
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (c.dtype() != TP::BOOL) ctx.Fail("condition must be bool, got " + c.DebugString());
    if (x.dtype() != y.dtype()) ctx.Fail("X and Y must have the same type");
    Tensor out(x.dtype(), BroadcastShape(ctx, {&c, &x, &y}));
    Broadcaster plan(out.shape(), {c.shape(), x.shape(), y.shape()});
    DispatchAll(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const bool* pc = c.data<bool>();
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out.mutable_data<T>();
      const auto& s = plan.inner_steps();
      std::vector<int64_t> off(3);
      for (int64_t row = 0, o = 0; row < plan.rows(); ++row) {
        plan.RowOffsets(row, off);
        for (int64_t i = 0; i < plan.row_length(); ++i, ++o) {
          po[o] = pc[off[0] + i * s[0]] ? px[off[1] + i * s[1]] : py[off[2] + i * s[2]];
        }
      }
    });
    ctx.output(0) = std::move(out);
  });
}

// ---- Cast ----

template <typename From, typename To>
To CastValue(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range float -> int is undefined in C++; saturate instead of crashing.
    if (std::isnan(v)) return To(0);
    double d = static_cast<double>(v);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) {
      return std::numeric_limits<To>::lowest();
    }
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// float16 and bfloat16 values are float32 in the executor (see tensor_io.h): a cast to them
// computes a float32 and rounds it to what the narrow type can hold.
using FloatRounding = float (*)(float);
FloatRounding NarrowFloatRounding(int32_t to) {
  if (to == TP::FLOAT16) return RoundToHalf;
  if (to == TP::BFLOAT16) return TruncateToBFloat16;
  return nullptr;
}

Tensor CastTensor(const KernelContext& ctx, const Tensor& x, int32_t to) {
  const auto round_narrow = NarrowFloatRounding(to);
  if (round_narrow) to = TP::FLOAT;
  if (to == TP::STRING || ir::DtypeSize(to) == 0) {
    ctx.Fail(fmt::format("Cast to {} is not supported by the executor", ir::DtypeName(to)));
  }
  Tensor y(to, x.shape());
  DispatchAll(ctx, x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    DispatchAll(ctx, to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* px = x.data<From>();
      To* py = y.mutable_data<To>();
      for (int64_t i = 0; i < x.size(); ++i) py[i] = CastValue<From, To>(px[i]);
    });
  });
  if (round_narrow) {
    float* p = y.mutable_data<float>();
    for (int64_t i = 0; i < y.size(); ++i) p[i] = round_narrow(p[i]);
  }
  return y;
}

// CastLike's target: its second input's type. A float16/bfloat16 input arrives as float32, so the
// declared type, looked up once at plan time, says whether to round.
struct CastLikeTarget {
  int32_t declared = 0;
};

std::shared_ptr<const void> PrepareCastLike(const KernelContext& ctx) {
  auto target = std::make_shared<CastLikeTarget>();
  if (ctx.model() != nullptr && ctx.node().input_size() > 1) {
    const ir::GraphView view(ctx.model()->proto.graph());
    const std::string& like = ctx.node().input(1);
    if (const auto* vi = view.ValueInfo(like)) {
      target->declared = vi->type().tensor_type().elem_type();
    } else if (const auto* init = view.Initializer(like)) {
      target->declared = init->data_type();
    }
  }
  return target;
}

void RegisterCast(KernelRegistry& r) {
  r.Register("", "Cast", 6, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({"to", "saturate"});
    if (!ctx.HasAttribute("to")) ctx.Fail("attribute 'to' is required");
    ctx.output(0) = CastTensor(ctx, ctx.input(0), static_cast<int32_t>(ctx.GetInt("to", 0)));
  });
  r.Register(
      "", "CastLike", 15, kLatest,
      [](KernelContext& ctx) {
        ctx.AllowAttributes({});
        const auto* target = ctx.prepared<CastLikeTarget>();
        const bool narrow = target && NarrowFloatRounding(target->declared);
        const int32_t to = narrow ? target->declared : ctx.input(1).dtype();
        ctx.output(0) = CastTensor(ctx, ctx.input(0), to);
      },
      PrepareCastLike);
}

// ---- Clip and variadic ----

void RegisterClip(KernelRegistry& r) {
  // Opset < 11: bounds are float attributes.
  r.Register("", "Clip", 6, 10, [](KernelContext& ctx) {
    ctx.AllowAttributes({"min", "max"});
    double lo = ctx.GetFloat("min", -std::numeric_limits<float>::max());
    double hi = ctx.GetFloat("max", std::numeric_limits<float>::max());
    const Tensor& x = ctx.input(0);
    DispatchFloat(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Tensor y = Tensor::Uninitialized(x.dtype(), x.shape());
      MapInto<T>(x, y, [&](T v) { return std::min(std::max(v, T(lo)), T(hi)); });
      ctx.output(0) = std::move(y);
    });
  });
  // Opset >= 11: optional scalar inputs min and max.
  r.Register("", "Clip", 11, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({});
    const Tensor& x = ctx.input(0);
    DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      // Bounds are scalars of x's type; anything else is refused, not read past its end.
      auto bound = [&](int i, T fallback) {
        if (!ctx.has_input(i)) return fallback;
        const Tensor& b = ctx.input(i);
        if (b.size() != 1 || b.dtype() != x.dtype()) {
          ctx.Fail(fmt::format("bound {} must be a single {} value, got {}", i,
                               ir::DtypeName(x.dtype()), b.DebugString()));
        }
        return b.data<T>()[0];
      };
      lo = bound(1, lo);
      hi = bound(2, hi);
      Tensor y = Tensor::Uninitialized(x.dtype(), x.shape());
      MapInto<T>(x, y, [&](T v) { return std::min(std::max(v, lo), hi); });
      ctx.output(0) = std::move(y);
    });
  });
}

// Folds the inputs pairwise with broadcasting; Mean divides at the end.
template <typename Op>
KernelFn VariadicKernel(Op op, bool mean) {
  return [op, mean](KernelContext& ctx) {
    ctx.AllowAttributes({});
    if (ctx.input_count() == 0) ctx.Fail("needs at least one input");
    Tensor acc = ctx.input(0);
    DispatchNumeric(ctx, acc.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int i = 1; i < ctx.input_count(); ++i) {
        const Tensor& next = ctx.input(i);
        if (next.dtype() != acc.dtype()) ctx.Fail("inputs have different types");
        Tensor out(acc.dtype(), BroadcastShape(ctx, {&acc, &next}));
        BinaryBroadcast<T, T, T>(acc, next, out, [&](T x, T y) { return T(op(x, y)); });
        acc = std::move(out);
      }
      if (mean) {
        T n = static_cast<T>(ctx.input_count());
        Tensor out(acc.dtype(), acc.shape());
        MapInto<T>(acc, out, [n](T v) { return v / n; });
        acc = std::move(out);
      } else if (ctx.input_count() == 1) {
        acc = acc.Clone();
      }
    });
    ctx.output(0) = std::move(acc);
  };
}

void RegisterVariadic(KernelRegistry& r) {
  auto max = [](auto x, auto y) { return std::isnan(double(x)) ? x : (x < y ? y : x); };
  auto min = [](auto x, auto y) { return std::isnan(double(x)) ? x : (y < x ? y : x); };
  r.Register("", "Max", 6, kLatest, VariadicKernel(max, false));
  r.Register("", "Min", 6, kLatest, VariadicKernel(min, false));
  r.Register("", "Sum", 6, kLatest, VariadicKernel(std::plus<>(), false));
  r.Register("", "Mean", 6, kLatest, VariadicKernel(std::plus<>(), true));
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& r) {
  RegisterUnaryOps(r);
  RegisterActivations(r);
  RegisterArithmetic(r);
  RegisterComparison(r);
  RegisterWhere(r);
  RegisterCast(r);
  RegisterClip(r);
  RegisterVariadic(r);
}

}  // namespace porttool::runtime
