// Elementwise kernels: unary math and activations, broadcasting binary arithmetic, comparison
// and logic, Where, Cast/CastLike, Clip (attribute and input forms), variadic Max/Min/Sum/Mean.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
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

// ---- float32 paths ----
//
// The build targets baseline x86-64, so the float32 loops live in PORTTOOL_SIMD_CLONES functions
// (simd.h) written over 8 lanes (vector_math.h); every other type (double, integers) keeps the
// generic per-element lambda. float16/bfloat16 tensors are float32 in the executor, so they take
// the float32 path too. The exact ops compute the same float operations, in the same order and
// with the same comparisons (so NaN and -0 come out as the generic lambda gives them), as the
// scalar lambda registered for the other types; the spans that multiply and add are compiled
// with fp-contract=off so an FMA clone does not fuse them. The transcendental ones use
// vector_math.h's approximations (a few ulp).

// Per-kernel constants read from the attributes (alpha, beta, gamma, bounds).
struct UnaryParams {
  float a = 0, b = 0, c = 0;
};
using FloatSpan = void (*)(const float*, float*, int64_t, const UnaryParams&);
using ReadParams = UnaryParams (*)(const KernelContext&);

// GCC only: its AVX2 clones would fuse a*v+b into an FMA. Clang has no such attribute, and the
// clones are GCC-only (simd.h), so its baseline code has no FMA to fuse into.
#if defined(__GNUC__) && !defined(__clang__)
#define PORTTOOL_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define PORTTOOL_NO_FP_CONTRACT
#endif

// One span function per op: y[i] = EXPR with v the input lanes and pa, pb, pc the UnaryParams;
// the _BODY form takes statements that `return` the result. EXACT spans are compiled without
// FMA contraction (they must round as the scalar lambda does); the approximations keep it.
#define PORTTOOL_UNARY_SPAN_WITH(NAME, ATTRS, ...)                           \
  PORTTOOL_SIMD_CLONES ATTRS void NAME(const float* x, float* y, int64_t n,  \
                                       const UnaryParams& p) {               \
    const float pa = p.a, pb = p.b, pc = p.c;                                \
    (void)pa, (void)pb, (void)pc;                                            \
    Map8(x, y, n, [&](V8f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { __VA_ARGS__ }); \
  }
#define PORTTOOL_UNARY_SPAN(NAME, EXPR) PORTTOOL_UNARY_SPAN_WITH(NAME, , return EXPR;)
#define PORTTOOL_EXACT_UNARY_SPAN(NAME, EXPR) \
  PORTTOOL_UNARY_SPAN_WITH(NAME, PORTTOOL_NO_FP_CONTRACT, return EXPR;)
#define PORTTOOL_EXACT_UNARY_SPAN_BODY(NAME, ...) \
  PORTTOOL_UNARY_SPAN_WITH(NAME, PORTTOOL_NO_FP_CONTRACT, __VA_ARGS__)

// The same over 16 lanes (vector_math.h's Map16), for the transcendental ops written for both
// widths: the same bits as 8 lanes, twice the throughput on 512-bit pipes.
#define PORTTOOL_WIDE_UNARY_SPAN(NAME, EXPR)                                                \
  PORTTOOL_SIMD_CLONES void NAME(const float* x, float* y, int64_t n, const UnaryParams&) { \
    Map16(x, y, n, [](V16f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return EXPR; });              \
  }

const V8f kZero8{};

PORTTOOL_WIDE_UNARY_SPAN(ErfSpan, ErfV(v))
PORTTOOL_WIDE_UNARY_SPAN(SigmoidSpan, SigmoidV(v))
PORTTOOL_WIDE_UNARY_SPAN(TanhSpan, TanhV(v))
PORTTOOL_WIDE_UNARY_SPAN(ExpSpan, ExpV(v))

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
// Exp with AVX-512's vscalefps for the e^r * 2^n step: one instruction that overflows to inf,
// underflows through the subnormals to 0 and passes NaN, where ExpV spends eight on bits and
// blends (the op ran at 1.3-1.8x ONNX Runtime's, whose kernel does the same).
// (Generic vector forms where they compile to the same instruction: GCC 12's unmasked
// _mm512_max_ps and _mm512_scalef_ps trip -Wmaybe-uninitialized inside its own header.)
PORTTOOL_AVX512 V16f Exp16Scalef(V16f x) {
  const V16f lo = V16f{} - 104.0f, hi = V16f{} + 88.7762626f;  // hi: just past ln(FLT_MAX)
  V16f c = lo > x ? lo : x;  // maxps/minps forms: NaN passes through
  c = hi < c ? hi : c;
  V16f t;
  const V16f p = ExpOfReduced(c, t);
  return _mm512_maskz_scalef_ps(0xffff, p, t - kExpRound);
}

PORTTOOL_AVX512 void ExpSpanAvx512(const float* x, float* y, int64_t n, const UnaryParams&) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V16f v;
    std::memcpy(&v, x + i, sizeof v);
    v = Exp16Scalef(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i == n) return;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
  _mm512_mask_storeu_ps(y + i, tail, Exp16Scalef(_mm512_maskz_loadu_ps(tail, x + i)));
}
#endif

FloatSpan ExpSpanForCpu() {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  if (HasAvx512()) return ExpSpanAvx512;
#endif
  return ExpSpan;
}
PORTTOOL_UNARY_SPAN(LogSpan, Log8(v))
PORTTOOL_EXACT_UNARY_SPAN(SqrtSpan, Sqrt8(v))
PORTTOOL_EXACT_UNARY_SPAN(ReciprocalSpan, 1.0f / v)
PORTTOOL_EXACT_UNARY_SPAN(SoftsignSpan, v / (1.0f + Abs8(v)))
// v > 0 ? v : 0, so NaN -> 0 as the generic lambda.
PORTTOOL_EXACT_UNARY_SPAN(ReluSpan, v > kZero8 ? v : kZero8)
// v < 0 ? -v : v (the generic lambda's form: -0 stays -0).
PORTTOOL_EXACT_UNARY_SPAN(AbsSpan, v < kZero8 ? -v : v)
PORTTOOL_EXACT_UNARY_SPAN(NegSpan, -v)
PORTTOOL_EXACT_UNARY_SPAN(LeakyReluSpan, v >= kZero8 ? v : pa * v)
PORTTOOL_EXACT_UNARY_SPAN(ThresholdedReluSpan, v > Broadcast8(pa) ? v : kZero8)
// std::max(0, std::min(1, a * v + b)): min(1, t) is t < 1 ? t : 1, max(0, m) is 0 < m ? m : 0.
PORTTOOL_EXACT_UNARY_SPAN_BODY(HardSigmoidSpan, const V8f t = pa * v + pb;
                               const V8f m = t < Splat(1.0f) ? t : Splat(1.0f);
                               return kZero8 < m ? m : kZero8;)
PORTTOOL_EXACT_UNARY_SPAN_BODY(HardSwishSpan, const V8f t = v / 6.0f + 0.5f;
                               const V8f m = t < Splat(1.0f) ? t : Splat(1.0f);
                               return v * (kZero8 < m ? m : kZero8);)
// std::min(std::max(v, lo), hi): max(v, lo) is v < lo ? lo : v, min(m, hi) is hi < m ? hi : m.
PORTTOOL_EXACT_UNARY_SPAN_BODY(ClipSpan, const V8f m = v < Broadcast8(pa) ? Broadcast8(pa) : v;
                               return Broadcast8(pb) < m ? Broadcast8(pb) : m;)
PORTTOOL_UNARY_SPAN(EluSpan, v >= kZero8 ? v : pa * Expm1_8(v))
// p.a = gamma, p.b = gamma * alpha (rounded once, from double).
PORTTOOL_UNARY_SPAN(SeluSpan, v > kZero8 ? pa * v : pb * Expm1_8(v))
PORTTOOL_UNARY_SPAN_WITH(CeluSpan, , const V8f pos = kZero8 < v ? v : kZero8;
                         const V8f w = pa * Expm1_8(v / pa);
                         return pos + (w < kZero8 ? w : kZero8);)
// max(v, 0) + log1p(e^-|v|): the generic lambda's two branches in one.
PORTTOOL_UNARY_SPAN(SoftplusSpan, (v > kZero8 ? v : kZero8) + Log1pNonNegative8(Exp8(-Abs8(v))))

UnaryParams NoParams(const KernelContext&) { return {}; }

// span over a float32 tensor, split across the pool.
Tensor MapFloat(const Tensor& x, FloatSpan span, const UnaryParams& params) {
  Tensor y = Tensor::Uninitialized(TP::FLOAT, x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  ParallelElements(x.size(), [&](int64_t b, int64_t e) { span(px + b, py + b, e - b, params); });
  return y;
}

// The kernel for `attrs`: float32 through `span` (with `read(ctx)`'s constants), any other type
// through `other_types`, which checks its attributes and dtype itself.
KernelFn VectorisedUnary(std::vector<std::string> attrs, ReadParams read, FloatSpan span,
                         KernelFn other_types) {
  return [attrs, read, span, other_types](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != TP::FLOAT) return other_types(ctx);
    ctx.AllowAttributes(attrs);
    ctx.output(0) = MapFloat(x, span, read(ctx));
  };
}

void RegisterVectorisedUnary(KernelRegistry& r, const char* name, FloatSpan span, auto generic) {
  r.Register("", name, 1, kLatest,
             VectorisedUnary({}, NoParams, span, UnaryKernel({}, FloatTypes{}, NoAttrs(generic))));
}

void RegisterUnaryOps(KernelRegistry& r) {
  RegisterVectorisedUnary(r, "Sigmoid", SigmoidSpan, [](auto v) { return 1 / (1 + std::exp(-v)); });
  RegisterVectorisedUnary(r, "Tanh", TanhSpan, [](auto v) { return std::tanh(v); });
  RegisterVectorisedUnary(r, "Erf", ErfSpan, [](auto v) { return std::erf(v); });
  RegisterVectorisedUnary(r, "Sqrt", SqrtSpan, [](auto v) { return std::sqrt(v); });
  RegisterVectorisedUnary(r, "Exp", ExpSpanForCpu(), [](auto v) { return std::exp(v); });
  RegisterVectorisedUnary(r, "Log", LogSpan, [](auto v) { return std::log(v); });
  RegisterVectorisedUnary(r, "Reciprocal", ReciprocalSpan, [](auto v) { return 1 / v; });
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
  RegisterVectorisedUnary(r, "Softsign", SoftsignSpan,
                          [](auto v) { return v / (1 + std::abs(v)); });
  RegisterVectorisedUnary(r, "Softplus", SoftplusSpan, [](auto v) {
    // log(1 + e^v) without overflow for large v.
    return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  });
  RegisterVectorisedUnary(r, "HardSwish", HardSwishSpan, [](auto v) {
    using T = decltype(v);
    return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
  });
  r.Register(
      "", "Relu", 1, kLatest,
      VectorisedUnary({}, NoParams, ReluSpan, UnaryKernel({}, SignedTypes{}, NoAttrs([](auto v) {
                                                            return v > 0 ? v : decltype(v)(0);
                                                          }))));
  r.Register("", "Abs", 1, kLatest,
             VectorisedUnary({}, NoParams, AbsSpan,
                             UnaryKernel({}, NumericTypes{}, NoAttrs([](auto v) {
                                           if constexpr (std::is_signed_v<decltype(v)>) {
                                             return v < 0 ? WrappingNegate(v) : v;
                                           } else {
                                             return v;
                                           }
                                         }))));
  r.Register("", "Neg", 1, kLatest,
             VectorisedUnary({}, NoParams, NegSpan,
                             UnaryKernel({}, SignedTypes{},
                                         NoAttrs([](auto v) { return WrappingNegate(v); }))));
  r.Register("", "Sign", 9, kLatest, UnaryKernel({}, NumericTypes{}, NoAttrs([](auto v) {
                                                   using T = decltype(v);
                                                   return T((T(0) < v) - (v < T(0)));
                                                 })));
}

// An activation with attributes: float32 through `span` with `read`'s constants, double through
// `make_op` as UnaryKernel.
void RegisterActivation(KernelRegistry& r, const char* name, int since,
                        std::vector<std::string> attrs, ReadParams read, FloatSpan span,
                        auto make_op) {
  r.Register("", name, since, kLatest,
             VectorisedUnary(attrs, read, span, UnaryKernel(attrs, FloatTypes{}, make_op)));
}

void RegisterActivations(KernelRegistry& r) {
  RegisterActivation(
      r, "LeakyRelu", 1, {"alpha"},
      [](const KernelContext& c) { return UnaryParams{c.GetFloat("alpha", 0.01f)}; }, LeakyReluSpan,
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 0.01f);
        return [a](auto v) { return v >= 0 ? v : decltype(v)(a * v); };
      });
  RegisterActivation(
      r, "HardSigmoid", 1, {"alpha", "beta"},
      [](const KernelContext& c) {
        return UnaryParams{c.GetFloat("alpha", 0.2f), c.GetFloat("beta", 0.5f)};
      },
      HardSigmoidSpan,
      [](const KernelContext& c) {
        float a = c.GetFloat("alpha", 0.2f), b = c.GetFloat("beta", 0.5f);
        return [a, b](auto v) {
          using T = decltype(v);
          return std::max(T(0), std::min(T(1), T(a) * v + T(b)));
        };
      });
  RegisterActivation(
      r, "Elu", 1, {"alpha"},
      [](const KernelContext& c) { return UnaryParams{c.GetFloat("alpha", 1.0f)}; }, EluSpan,
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 1.0f);
        return [a](auto v) { return v >= 0 ? v : decltype(v)(a * std::expm1(v)); };
      });
  RegisterActivation(
      r, "Celu", 12, {"alpha"},
      [](const KernelContext& c) { return UnaryParams{c.GetFloat("alpha", 1.0f)}; }, CeluSpan,
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 1.0f);
        return [a](auto v) {
          using T = decltype(v);
          return std::max(T(0), v) + std::min(T(0), T(a * std::expm1(v / a)));
        };
      });
  RegisterActivation(
      r, "Selu", 1, {"alpha", "gamma"},
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 1.67326319217681884765625f);
        double g = c.GetFloat("gamma", 1.05070102214813232421875f);
        return UnaryParams{static_cast<float>(g), static_cast<float>(g * a)};
      },
      SeluSpan,
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 1.67326319217681884765625f);
        double g = c.GetFloat("gamma", 1.05070102214813232421875f);
        return [a, g](auto v) { return decltype(v)(v > 0 ? g * v : g * a * std::expm1(v)); };
      });
  RegisterActivation(
      r, "ThresholdedRelu", 10, {"alpha"},
      [](const KernelContext& c) { return UnaryParams{c.GetFloat("alpha", 1.0f)}; },
      ThresholdedReluSpan,
      [](const KernelContext& c) {
        double a = c.GetFloat("alpha", 1.0f);
        return [a](auto v) { return v > a ? v : decltype(v)(0); };
      });
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

// o[i] = EXPR over float32 runs, x and y the lanes of a and b (an operand with step 0 is one value
// broadcast along the run).
using BinarySpan = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t);
#define PORTTOOL_BINARY_SPAN(NAME, EXPR)                                             \
  PORTTOOL_SIMD_CLONES PORTTOOL_NO_FP_CONTRACT void NAME(                            \
      const float* a, int64_t sa, const float* b, int64_t sb, float* o, int64_t n) { \
    Map8Binary(a, sa, b, sb, o, n,                                                   \
               [](V8f x, V8f y) PORTTOOL_ALWAYS_INLINE_LAMBDA { return EXPR; });     \
  }

PORTTOOL_BINARY_SPAN(AddSpan, x + y)
PORTTOOL_BINARY_SPAN(SubSpan, x - y)
PORTTOOL_BINARY_SPAN(MulSpan, x* y)
PORTTOOL_BINARY_SPAN(DivSpan, x / y)
PORTTOOL_BINARY_SPAN(PReluSpan, x < kZero8 ? x * y : x)
// The generic Max/Min lambdas: a NaN first operand wins, a NaN second operand loses (the
// comparison is false), and of two equal values (+0 and -0) the first is kept.
PORTTOOL_BINARY_SPAN(MaxSpan, x != x ? x : (x < y ? y : x))
PORTTOOL_BINARY_SPAN(MinSpan, x != x ? x : (y < x ? y : x))

// Rows shorter than this are widened first (WidenedOperand).
constexpr int64_t kShortBroadcastRow = 16;

// `t` with its trailing broadcast dims (size 1 where `out_shape` is larger) filled in by
// repetition, when they make the walk's rows short: a per-channel floor [1, C, 1, 1] over
// [N, C, 4, 1] was a span call per 4 elements (a LeakyRelu conv net's Max took 12 us for 4096
// values). Widened to [1, C, 4, 1], the walk merges C x 4 into one row. nullopt when not worth it.
std::optional<Tensor> WidenedOperand(const Tensor& t, const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> shape(out_shape.size() - t.rank(), 1);
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  int64_t repeat = 1;
  size_t keep = shape.size();
  while (keep > 0 && shape[keep - 1] == 1) repeat *= out_shape[--keep];
  if (repeat <= 1 || repeat >= kShortBroadcastRow || keep == 0) return std::nullopt;
  for (size_t i = keep; i < shape.size(); ++i) shape[i] = out_shape[i];
  Tensor wide = Tensor::Uninitialized(TP::FLOAT, shape);
  const float* src = t.data<float>();
  float* dst = wide.mutable_data<float>();
  for (int64_t i = 0; i < t.size(); ++i) std::fill_n(dst + i * repeat, repeat, src[i]);
  return wide;
}

// BinaryBroadcast (kernel_util.h) for float32 with a span per contiguous run of the same walk.
void FloatBroadcast(const Tensor& a, const Tensor& b, Tensor& out, BinarySpan span) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.mutable_data<float>();
  if (a.shape() == b.shape()) {
    ParallelElements(out.size(), [&](int64_t begin, int64_t end) {
      span(pa + begin, 1, pb + begin, 1, po + begin, end - begin);
    });
    return;
  }
  Broadcaster plan(out.shape(), {a.shape(), b.shape()});
  if (plan.row_length() < kShortBroadcastRow && plan.rows() > 1) {
    const bool a_full = a.shape() == out.shape(), b_full = b.shape() == out.shape();
    std::optional<Tensor> wide = a_full   ? WidenedOperand(b, out.shape())
                                 : b_full ? WidenedOperand(a, out.shape())
                                          : std::nullopt;
    if (wide)
      return a_full ? FloatBroadcast(a, *wide, out, span) : FloatBroadcast(*wide, b, out, span);
  }
  const int64_t sa = plan.inner_steps()[0], sb = plan.inner_steps()[1];
  ForEachBroadcastRun(plan, [&](const int64_t* in, int64_t at, int64_t count) {
    span(pa + in[0], sa, pb + in[1], sb, po + at, count);
  });
}

// float32 through `float_span` when given, the other types (and float32 without one) through op.
template <typename DispatchFn, typename Op>
KernelFn BinaryKernel(std::vector<std::string> attrs, DispatchFn dispatch, Op op,
                      BinarySpan float_span = nullptr) {
  return [attrs, dispatch, op, float_span](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    Tensor b = SecondOperand(ctx, attrs);
    if (a.dtype() != b.dtype()) {
      ctx.Fail(
          fmt::format("inputs have different types: {} and {}", a.DebugString(), b.DebugString()));
    }
    Tensor out = Tensor::Uninitialized(a.dtype(), BroadcastShape(ctx, {&a, &b}));
    if (float_span != nullptr && a.dtype() == TP::FLOAT) {
      FloatBroadcast(a, b, out, float_span);
    } else {
      dispatch(ctx, a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        BinaryBroadcast<T, T, T>(a, b, out, [&](T x, T y) { return static_cast<T>(op(x, y)); });
      });
    }
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

// float32 x^e for the constant exponents with an exact lanewise form (what std::pow gives:
// pow(x, 0) = 1 even for NaN; pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf where sqrt gives -0
// and NaN); nullptr for any other exponent.
PORTTOOL_EXACT_UNARY_SPAN_BODY(PowZeroSpan, (void)v; return Splat(1.0f);)
PORTTOOL_EXACT_UNARY_SPAN(PowOneSpan, v)
PORTTOOL_EXACT_UNARY_SPAN(PowTwoSpan, v* v)
PORTTOOL_EXACT_UNARY_SPAN_BODY(PowHalfSpan, const V8f r = Sqrt8(v) + 0.0f;
                               return v == Splat(-__builtin_inff()) ? Splat(__builtin_inff()) : r;)

FloatSpan ConstantPowSpan(float e) {
  if (e == 0.0f) return PowZeroSpan;
  if (e == 1.0f) return PowOneSpan;
  if (e == 2.0f) return PowTwoSpan;
  if (e == 0.5f) return PowHalfSpan;
  return nullptr;
}

void RegisterPow(KernelRegistry& r) {
  r.Register("", "Pow", 1, kLatest, [](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    Tensor b = SecondOperand(ctx, {});
    std::vector<int64_t> out_shape = BroadcastShape(ctx, {&a, &b});
    // A single float32 exponent: out has a's elements in a's order (only its rank may grow).
    if (a.dtype() == TP::FLOAT && b.dtype() == TP::FLOAT && b.size() == 1) {
      if (FloatSpan span = ConstantPowSpan(b.data<float>()[0])) {
        ctx.output(0) = MapFloat(a, span, {}).Reshaped(out_shape);
        return;
      }
    }
    Tensor out(a.dtype(), out_shape);
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
  r.Register("", "Add", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::plus<>(), AddSpan));
  r.Register("", "Sub", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::minus<>(), SubSpan));
  r.Register("", "Mul", 1, kLatest, BinaryKernel({}, NumericTypes{}, std::multiplies<>(), MulSpan));
  r.Register("", "Div", 1, kLatest,
             BinaryKernel(
                 {}, NumericTypes{},
                 [](auto x, auto y) {
                   if constexpr (std::is_integral_v<decltype(x)>) {
                     return y == 0 ? decltype(x)(0) : decltype(x)(x / y);
                   } else {
                     return x / y;
                   }
                 },
                 DivSpan));
  // PRelu's slope broadcasts to X (unidirectional); the multidirectional broadcast covers it.
  r.Register("", "PRelu", 1, kLatest,
             BinaryKernel(
                 {}, SignedTypes{}, [](auto x, auto s) { return x < 0 ? decltype(x)(x * s) : x; },
                 PReluSpan));
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

// Where over 4- and 8-byte elements, moved as unsigned integers: o[i] = c[i] ? x[i] : y[i] as a
// bit select, so the loop vectorises (a bool is 0 or 1 in the executor's storage). An operand
// with step 0 is its element 0 for every i; each step pattern gets its own loop.
template <typename U, bool kC, bool kX, bool kY>
PORTTOOL_ALWAYS_INLINE void WhereRun(const uint8_t* c, const U* x, const U* y, U* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const U m = U(0) - static_cast<U>(c[kC ? i : 0] != 0);
    o[i] = (x[kX ? i : 0] & m) | (y[kY ? i : 0] & ~m);
  }
}

template <typename U>
PORTTOOL_ALWAYS_INLINE void WhereRunSteps(const uint8_t* c, int64_t sc, const U* x, int64_t sx,
                                          const U* y, int64_t sy, U* o, int64_t n) {
  switch ((sc ? 4 : 0) | (sx ? 2 : 0) | (sy ? 1 : 0)) {
    case 0:
      return WhereRun<U, false, false, false>(c, x, y, o, n);
    case 1:
      return WhereRun<U, false, false, true>(c, x, y, o, n);
    case 2:
      return WhereRun<U, false, true, false>(c, x, y, o, n);
    case 3:
      return WhereRun<U, false, true, true>(c, x, y, o, n);
    case 4:
      return WhereRun<U, true, false, false>(c, x, y, o, n);
    case 5:
      return WhereRun<U, true, false, true>(c, x, y, o, n);
    case 6:
      return WhereRun<U, true, true, false>(c, x, y, o, n);
    default:
      return WhereRun<U, true, true, true>(c, x, y, o, n);
  }
}

PORTTOOL_SIMD_CLONES void WhereSpan32(const uint8_t* c, int64_t sc, const uint32_t* x, int64_t sx,
                                      const uint32_t* y, int64_t sy, uint32_t* o, int64_t n) {
  WhereRunSteps(c, sc, x, sx, y, sy, o, n);
}
PORTTOOL_SIMD_CLONES void WhereSpan64(const uint8_t* c, int64_t sc, const uint64_t* x, int64_t sx,
                                      const uint64_t* y, int64_t sy, uint64_t* o, int64_t n) {
  WhereRunSteps(c, sc, x, sx, y, sy, o, n);
}

template <typename U>
void WhereSpan(const uint8_t* c, int64_t sc, const U* x, int64_t sx, const U* y, int64_t sy, U* o,
               int64_t n) {
  if constexpr (sizeof(U) == 4) {
    WhereSpan32(c, sc, x, sx, y, sy, o, n);
  } else if constexpr (sizeof(U) == 8) {
    WhereSpan64(c, sc, x, sx, y, sy, o, n);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
}

void RegisterWhere(KernelRegistry& r) {
  r.Register("", "Where", 9, kLatest, [](KernelContext& ctx) {
    ctx.AllowAttributes({});
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (c.dtype() != TP::BOOL) ctx.Fail("condition must be bool, got " + c.DebugString());
    if (x.dtype() != y.dtype()) ctx.Fail("X and Y must have the same type");
    Tensor out = Tensor::Uninitialized(x.dtype(), BroadcastShape(ctx, {&c, &x, &y}));
    Broadcaster plan(out.shape(), {c.shape(), x.shape(), y.shape()});
    const auto& s = plan.inner_steps();
    DispatchAll(ctx, x.dtype(), [&](auto tag) {
      // The elements move as unsigned integers of their size.
      using T = decltype(tag);
      using U = std::conditional_t<
          sizeof(T) == 8, uint64_t,
          std::conditional_t<sizeof(T) == 4, uint32_t,
                             std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;
      static_assert(sizeof(U) == sizeof(T));
      const uint8_t* pc = reinterpret_cast<const uint8_t*>(c.data<bool>());
      const U* px = reinterpret_cast<const U*>(x.data<T>());
      const U* py = reinterpret_cast<const U*>(y.data<T>());
      U* po = reinterpret_cast<U*>(out.mutable_data<T>());
      ForEachBroadcastRun(plan, [&](const int64_t* in, int64_t at, int64_t count) {
        WhereSpan(pc + in[0], s[0], px + in[1], s[1], py + in[2], s[2], po + at, count);
      });
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
    if (x.dtype() == TP::FLOAT) {
      ctx.output(0) = MapFloat(x, ClipSpan, {static_cast<float>(lo), static_cast<float>(hi)});
      return;
    }
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
      if constexpr (std::is_same_v<T, float>) {
        ctx.output(0) = MapFloat(x, ClipSpan, {lo, hi});
        return;
      }
      Tensor y = Tensor::Uninitialized(x.dtype(), x.shape());
      MapInto<T>(x, y, [&](T v) { return std::min(std::max(v, lo), hi); });
      ctx.output(0) = std::move(y);
    });
  });
}

// Folds the inputs pairwise with broadcasting; Mean divides at the end.
template <typename Op>
KernelFn VariadicKernel(Op op, bool mean, BinarySpan float_span) {
  return [op, mean, float_span](KernelContext& ctx) {
    ctx.AllowAttributes({});
    if (ctx.input_count() == 0) ctx.Fail("needs at least one input");
    Tensor acc = ctx.input(0);
    DispatchNumeric(ctx, acc.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int i = 1; i < ctx.input_count(); ++i) {
        const Tensor& next = ctx.input(i);
        if (next.dtype() != acc.dtype()) ctx.Fail("inputs have different types");
        Tensor out = Tensor::Uninitialized(acc.dtype(), BroadcastShape(ctx, {&acc, &next}));
        if constexpr (std::is_same_v<T, float>) {
          FloatBroadcast(acc, next, out, float_span);
        } else {
          BinaryBroadcast<T, T, T>(acc, next, out, [&](T x, T y) { return T(op(x, y)); });
        }
        acc = std::move(out);
      }
      if (mean) {
        T n = static_cast<T>(ctx.input_count());
        Tensor out(acc.dtype(), acc.shape());
        if constexpr (std::is_same_v<T, float>) {
          const float* pa = acc.data<float>();
          float* po = out.mutable_data<float>();
          ParallelElements(acc.size(),
                           [&](int64_t b, int64_t e) { DivSpan(pa + b, 1, &n, 0, po + b, e - b); });
        } else {
          MapInto<T>(acc, out, [n](T v) { return v / n; });
        }
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
  r.Register("", "Max", 6, kLatest, VariadicKernel(max, false, MaxSpan));
  r.Register("", "Min", 6, kLatest, VariadicKernel(min, false, MinSpan));
  r.Register("", "Sum", 6, kLatest, VariadicKernel(std::plus<>(), false, AddSpan));
  r.Register("", "Mean", 6, kLatest, VariadicKernel(std::plus<>(), true, AddSpan));
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

#undef PORTTOOL_BINARY_SPAN
#undef PORTTOOL_EXACT_UNARY_SPAN_BODY
#undef PORTTOOL_EXACT_UNARY_SPAN
#undef PORTTOOL_UNARY_SPAN
#undef PORTTOOL_UNARY_SPAN_WITH
#undef PORTTOOL_NO_FP_CONTRACT
