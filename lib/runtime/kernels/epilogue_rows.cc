// Compiled with -ffp-contract=off (CMakeLists.txt): the fused v * scale + shift rounds twice,
// as the Mul and Add nodes it replaces do, so a fused run matches the unfused one bit for bit
// except where constants were composed at plan time.
#include "lib/runtime/kernels/epilogue_rows.h"

#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"

namespace porttool::runtime::kernels {
namespace {

// Each activation written with the same comparisons as its node's kernel (std::min/std::max
// order, so NaN goes where the unfused op sends it).
PORTTOOL_ALWAYS_INLINE V8f Min(V8f a, V8f b) { return b < a ? b : a; }  // std::min(a, b)
PORTTOOL_ALWAYS_INLINE V8f Max(V8f a, V8f b) { return a < b ? b : a; }  // std::max(a, b)

template <EpilogueAct A>
PORTTOOL_ALWAYS_INLINE V8f Activate(V8f v, const EpilogueSpec& s) {
  if constexpr (A == EpilogueAct::kRelu) {
    return v > Splat(0.f) ? v : Splat(0.f);
  } else if constexpr (A == EpilogueAct::kLeakyRelu) {
    return v >= Splat(0.f) ? v : v * s.alpha;
  } else if constexpr (A == EpilogueAct::kClip) {
    return Min(Max(v, Splat(s.lo)), Splat(s.hi));
  } else if constexpr (A == EpilogueAct::kHardSigmoid) {
    return Max(Splat(0.f), Min(Splat(1.f), s.alpha * v + s.beta));
  } else if constexpr (A == EpilogueAct::kHardSwish) {
    return v * Max(Splat(0.f), Min(Splat(1.f), v / 6.f + 0.5f));
  } else if constexpr (A == EpilogueAct::kHardSwishClipDiv) {
    return v * Min(Max(v + s.add, Splat(s.lo)), Splat(s.hi)) / s.div;
  } else {
    return v;
  }
}

// v * post_scale + post_shift over n values, rounded twice as the Mul and Add nodes do.
PORTTOOL_SIMD_CLONES void PostAffine(const EpilogueSpec& s, float* y, int64_t n) {
  const float k = s.post_scale, t = s.post_shift;
  Map8(y, y, n, [&](V8f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return v * k + t; });
}

// The parts applied in further passes over a finished row: the transcendental activations
// (compiled apart, epilogue_act.cc) and the affine after the activation.
PORTTOOL_ALWAYS_INLINE void FinishRowPasses(const EpilogueSpec& s, float* y, int64_t n) {
  if (IsTranscendental(s.act)) ActivateTranscendental(s, y, n);
  if (s.post_affine) PostAffine(s, y, n);
}

struct RowArgs {
  float bias, scale, shift;
  const EpilogueSpec* spec;
};

template <EpilogueAct A, bool kResidual>
PORTTOOL_ALWAYS_INLINE void Row(float* y, const float* r, int64_t n, const RowArgs& a) {
  const auto f = [&](V8f v, V8f res) PORTTOOL_ALWAYS_INLINE_LAMBDA {
    v = (v + a.bias) * a.scale + a.shift;
    if constexpr (kResidual) v = v + res;
    return Activate<A>(v, *a.spec);
  };
  int64_t i = 0;
  V8f v, res{};
  for (; i + 8 <= n; i += 8) {
    std::memcpy(&v, y + i, sizeof v);
    if constexpr (kResidual) std::memcpy(&res, r + i, sizeof res);
    v = f(v, res);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < n) {
    if constexpr (kResidual) res = LoadPartial(r + i, n - i, 0.f);
    StorePartial(y + i, n - i, f(LoadPartial(y + i, n - i, 0.f), res));
  }
}

template <EpilogueAct A, bool kResidual>
PORTTOOL_ALWAYS_INLINE void Rows(const float* bias, const EpilogueSpec& spec, int64_t channel,
                                 int64_t rows, int64_t cols, int64_t ld, float* y,
                                 const float* residual) {
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t c = channel + row;
    // -0 is the identity of addition (+0 would turn a -0 result into +0, which the unfused
    // nodes keep), 1 that of multiplication.
    const RowArgs a{bias ? bias[row] : -0.f, spec.scale.empty() ? 1.f : spec.scale[c],
                    spec.shift.empty() ? -0.f : spec.shift[c], &spec};
    Row<A, kResidual>(y + row * ld, kResidual ? residual + row * ld : nullptr, cols, a);
    FinishRowPasses(spec, y + row * ld, cols);
  }
}

// A per-column tile: (v + bias[col]) * scale[col] + shift[col] (+ residual), then the
// activation; the operations of Rows in the same order, so either layout gives the same bits.
template <EpilogueAct A, bool kResidual>
PORTTOOL_ALWAYS_INLINE void Columns(const float* bias, const EpilogueSpec& spec, int64_t col0,
                                    int64_t rows, int64_t cols, int64_t ld, float* y,
                                    const float* residual) {
  const float* scale = spec.scale.empty() ? nullptr : spec.scale.data() + col0;
  const float* shift = spec.shift.empty() ? nullptr : spec.shift.data() + col0;
  const auto f = [&](V8f v, V8f b, V8f k, V8f t, V8f res) PORTTOOL_ALWAYS_INLINE_LAMBDA {
    v = (v + b) * k + t;
    if constexpr (kResidual) v = v + res;
    return Activate<A>(v, spec);
  };
  // -0 is the identity of addition (see Rows), 1 that of multiplication.
  const V8f ones = Splat(1.f), minus_zeros = Broadcast8(-0.f);
  for (int64_t row = 0; row < rows; ++row) {
    float* out = y + row * ld;
    const float* res_row = kResidual ? residual + row * ld : nullptr;
    int64_t i = 0;
    V8f v, b = minus_zeros, k = ones, t = minus_zeros, res{};
    for (; i + 8 <= cols; i += 8) {
      std::memcpy(&v, out + i, sizeof v);
      if (bias) std::memcpy(&b, bias + i, sizeof b);
      if (scale) std::memcpy(&k, scale + i, sizeof k);
      if (shift) std::memcpy(&t, shift + i, sizeof t);
      if constexpr (kResidual) std::memcpy(&res, res_row + i, sizeof res);
      v = f(v, b, k, t, res);
      std::memcpy(out + i, &v, sizeof v);
    }
    if (i < cols) {
      const int64_t rest = cols - i;
      if (bias) b = LoadPartial(bias + i, rest, -0.f);
      if (scale) k = LoadPartial(scale + i, rest, 1.f);
      if (shift) t = LoadPartial(shift + i, rest, 0.f);
      if constexpr (kResidual) res = LoadPartial(res_row + i, rest, 0.f);
      StorePartial(out + i, rest, f(LoadPartial(out + i, rest, 0.f), b, k, t, res));
    }
    FinishRowPasses(spec, out, cols);
  }
}

template <EpilogueAct A>
PORTTOOL_SIMD_CLONES void ColumnsFor(const float* bias, const EpilogueSpec& spec, int64_t col0,
                                     int64_t rows, int64_t cols, int64_t ld, float* y,
                                     const float* residual) {
  if (residual) {
    Columns<A, true>(bias, spec, col0, rows, cols, ld, y, residual);
  } else {
    Columns<A, false>(bias, spec, col0, rows, cols, ld, y, residual);
  }
}

template <EpilogueAct A>
PORTTOOL_SIMD_CLONES void RowsFor(const float* bias, const EpilogueSpec& spec, int64_t channel,
                                  int64_t rows, int64_t cols, int64_t ld, float* y,
                                  const float* residual) {
  if (residual) {
    Rows<A, true>(bias, spec, channel, rows, cols, ld, y, residual);
  } else {
    Rows<A, false>(bias, spec, channel, rows, cols, ld, y, residual);
  }
}

PORTTOOL_SIMD_CLONES void AddBias(const float* bias, int64_t rows, int64_t cols, int64_t ld,
                                  float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float b = bias[r];
    float* row = y + r * ld;
    for (int64_t j = 0; j < cols; ++j) row[j] += b;
  }
}

}  // namespace

const Epilogue* UsableEpilogue(const Epilogue* epilogue, const Tensor& y) {
  if (epilogue == nullptr || epilogue->spec == nullptr) return nullptr;
  const Tensor* r = epilogue->residual;
  if (!epilogue->spec->residual.empty() &&
      (r == nullptr || r->dtype() != onnx::TensorProto::FLOAT || r->shape() != y.shape())) {
    return nullptr;
  }
  const EpilogueSpec& s = *epilogue->spec;
  const int channel_axis = s.per_column ? y.rank() - 1 : 1;
  const auto channels =
      static_cast<size_t>(channel_axis >= 0 && channel_axis < y.rank() ? y.dim(channel_axis) : 0);
  if ((!s.scale.empty() && s.scale.size() != channels) ||
      (!s.shift.empty() && s.shift.size() != channels)) {
    return nullptr;
  }
  return epilogue;
}

// Calls FN<act>(args...) for the spec's activation; the transcendental ones run as kNone here
// and are applied afterwards by ActivateTranscendental.
#define PORTTOOL_EPILOGUE_DISPATCH(act, FN, ...)       \
  switch (act) {                                       \
    case EpilogueAct::kRelu:                           \
      FN<EpilogueAct::kRelu>(__VA_ARGS__);             \
      break;                                           \
    case EpilogueAct::kLeakyRelu:                      \
      FN<EpilogueAct::kLeakyRelu>(__VA_ARGS__);        \
      break;                                           \
    case EpilogueAct::kClip:                           \
      FN<EpilogueAct::kClip>(__VA_ARGS__);             \
      break;                                           \
    case EpilogueAct::kHardSigmoid:                    \
      FN<EpilogueAct::kHardSigmoid>(__VA_ARGS__);      \
      break;                                           \
    case EpilogueAct::kHardSwish:                      \
      FN<EpilogueAct::kHardSwish>(__VA_ARGS__);        \
      break;                                           \
    case EpilogueAct::kHardSwishClipDiv:               \
      FN<EpilogueAct::kHardSwishClipDiv>(__VA_ARGS__); \
      break;                                           \
    case EpilogueAct::kNone:                           \
    case EpilogueAct::kSigmoid:                        \
    case EpilogueAct::kSilu:                           \
    case EpilogueAct::kGelu:                           \
      FN<EpilogueAct::kNone>(__VA_ARGS__);             \
      break;                                           \
  }

void FinishRows(const float* bias, const Epilogue* epilogue, int64_t channel, int64_t rows,
                int64_t cols, int64_t ld, float* y, const float* residual) {
  if (epilogue == nullptr) {
    if (bias) AddBias(bias, rows, cols, ld, y);
    return;
  }
  const EpilogueSpec& s = *epilogue->spec;
  PORTTOOL_EPILOGUE_DISPATCH(s.act, RowsFor, bias, s, channel, rows, cols, ld, y, residual)
}

void FinishColumns(const float* bias, const Epilogue* epilogue, int64_t col0, int64_t rows,
                   int64_t cols, int64_t ld, float* y, const float* residual) {
  static const EpilogueSpec kBiasOnly;
  const EpilogueSpec& s = epilogue ? *epilogue->spec : kBiasOnly;
  if (epilogue == nullptr && bias == nullptr) return;
  PORTTOOL_EPILOGUE_DISPATCH(s.act, ColumnsFor, bias, s, col0, rows, cols, ld, y, residual)
}
#undef PORTTOOL_EPILOGUE_DISPATCH

}  // namespace porttool::runtime::kernels
