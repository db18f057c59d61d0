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
  } else if constexpr (A == EpilogueAct::kSigmoid) {
    return Sigmoid8(v);
  } else if constexpr (A == EpilogueAct::kHardSwish) {
    return v * Max(Splat(0.f), Min(Splat(1.f), v / 6.f + 0.5f));
  } else if constexpr (A == EpilogueAct::kHardSwishClipDiv) {
    return v * Min(Max(v + s.add, Splat(s.lo)), Splat(s.hi)) / s.div;
  } else {
    return v;
  }
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

void AddBias(const float* bias, int64_t rows, int64_t cols, int64_t ld, float* y) {
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
  const auto channels = static_cast<size_t>(y.rank() >= 2 ? y.dim(1) : 0);
  const EpilogueSpec& s = *epilogue->spec;
  if ((!s.scale.empty() && s.scale.size() != channels) ||
      (!s.shift.empty() && s.shift.size() != channels)) {
    return nullptr;
  }
  return epilogue;
}

void FinishRows(const float* bias, const Epilogue* epilogue, int64_t channel, int64_t rows,
                int64_t cols, int64_t ld, float* y, const float* residual) {
  if (epilogue == nullptr) {
    if (bias) AddBias(bias, rows, cols, ld, y);
    return;
  }
  const EpilogueSpec& s = *epilogue->spec;
  switch (s.act) {
#define PORTTOOL_EPILOGUE_CASE(A)                                           \
  case EpilogueAct::A:                                                      \
    RowsFor<EpilogueAct::A>(bias, s, channel, rows, cols, ld, y, residual); \
    break;
    PORTTOOL_EPILOGUE_CASE(kNone)
    PORTTOOL_EPILOGUE_CASE(kRelu)
    PORTTOOL_EPILOGUE_CASE(kLeakyRelu)
    PORTTOOL_EPILOGUE_CASE(kClip)
    PORTTOOL_EPILOGUE_CASE(kHardSigmoid)
    PORTTOOL_EPILOGUE_CASE(kSigmoid)
    PORTTOOL_EPILOGUE_CASE(kHardSwish)
    PORTTOOL_EPILOGUE_CASE(kHardSwishClipDiv)
#undef PORTTOOL_EPILOGUE_CASE
  }
}

}  // namespace porttool::runtime::kernels
