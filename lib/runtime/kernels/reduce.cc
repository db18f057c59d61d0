// Reductions (Reduce*, ArgMax/ArgMin, TopK) and the softmax family. Softmax, LogSoftmax and
// Hardmax changed meaning at opset 13: before, the input is flattened to 2-D at `axis` (default 1)
// and normalised over everything from `axis` on; from 13, over the single `axis` (default -1).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "lib/ir/dtype.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/epilogue_rows.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceSpec {
  std::vector<bool> reduced;  // per input axis
  std::vector<int64_t> out_shape;
};

// Axes come from the attribute before `input_opset` and from input 1 from then on.
ReduceSpec PlanReduce(KernelContext& ctx, const Tensor& x, int input_opset) {
  bool axes_as_input = ctx.opset() >= input_opset;
  std::vector<int64_t> axes;
  if (axes_as_input) {
    ctx.AllowAttributes({"keepdims", "noop_with_empty_axes"});
    if (ctx.has_input(1)) axes = ReadInts(ctx, ctx.input(1));
  } else {
    ctx.AllowAttributes({"keepdims", "axes"});
    axes = ctx.GetInts("axes");
  }
  bool keepdims = ctx.GetInt("keepdims", 1) != 0;
  bool noop = ctx.GetInt("noop_with_empty_axes", 0) != 0;
  ReduceSpec spec;
  spec.reduced.assign(x.rank(), axes.empty() && !noop);
  for (int64_t a : axes) spec.reduced[NormalizeAxis(ctx, a, x.rank())] = true;
  for (int d = 0; d < x.rank(); ++d) {
    if (!spec.reduced[d]) {
      spec.out_shape.push_back(x.dim(d));
    } else if (keepdims) {
      spec.out_shape.push_back(1);
    }
  }
  return spec;
}

// Integer accumulation wraps (two's complement, as ONNX Runtime's does) instead of overflowing,
// which is undefined behaviour for int64: sums and products of model data are unbounded.
template <typename Acc>
Acc AccAdd(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename Acc>
Acc AccMul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <typename T, typename Acc>
void ReduceT(const Tensor& x, const ReduceSpec& spec, Reduction kind, Tensor& out) {
  const int rank = x.rank();
  // Output element strides in input-axis terms (0 along reduced axes).
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (int d = rank; d-- > 0;) {
    if (!spec.reduced[d]) {
      out_strides[d] = stride;
      stride *= x.dim(d);
    }
  }
  const int64_t n_out = out.size();
  const int64_t count = n_out == 0 ? 0 : x.size() / n_out;
  Acc init = 0;
  if (kind == Reduction::kMax) init = std::numeric_limits<Acc>::lowest();
  if (kind == Reduction::kMin) init = std::numeric_limits<Acc>::max();
  if (kind == Reduction::kProd) init = 1;
  std::vector<Acc> acc(n_out, init);
  const T* px = x.data<T>();
  std::vector<int64_t> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    Acc v = static_cast<Acc>(px[i]);
    Acc& a = acc[o];
    switch (kind) {
      case Reduction::kMax:
        a = std::max(a, v);
        break;
      case Reduction::kMin:
        a = std::min(a, v);
        break;
      case Reduction::kProd:
        a = AccMul(a, v);
        break;
      case Reduction::kL1:
        a = AccAdd(a, v < 0 ? AccMul(v, Acc(-1)) : v);
        break;
      case Reduction::kL2:
      case Reduction::kSumSquare:
        a = AccAdd(a, AccMul(v, v));
        break;
      case Reduction::kLogSumExp:
        // exp of an integer input overflows int64 from 44 on: saturate (a plain cast is UB).
        a = AccAdd(a, SaturateCast<Acc>(std::exp(static_cast<double>(v))));
        break;
      default:
        a = AccAdd(a, v);
    }
    for (int d = rank; d-- > 0;) {
      o += out_strides[d];
      if (++idx[d] < x.dim(d)) break;
      o -= out_strides[d] * x.dim(d);
      idx[d] = 0;
    }
  }
  T* po = out.mutable_data<T>();
  for (int64_t j = 0; j < n_out; ++j) {
    double a = static_cast<double>(acc[j]);
    switch (kind) {
      case Reduction::kMean:
        a = count ? a / static_cast<double>(count) : a;
        break;
      case Reduction::kL2:
        a = std::sqrt(a);
        break;
      case Reduction::kLogSum:
      case Reduction::kLogSumExp:
        a = std::log(a);
        break;
      default:
        break;
    }
    po[j] = std::is_integral_v<T> && kind != Reduction::kMean ? static_cast<T>(acc[j])
                                                              : SaturateCast<T>(a);
  }
}

// One row of a fused LayerNormalization, computed as its unfused nodes compute it: the mean and
// the variance summed in double and rounded to float as ReduceMean does, d * d as Pow 2 does,
// then Add, Sqrt and Div in float. The same bits as the nodes.
void LayerNormRow(const float* x, float* y, int64_t n, float epsilon) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = SaturateCast<float>(sum / static_cast<double>(n));
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    const float square = d * d;
    squares += square;
    y[i] = d;
  }
  const float deviation =
      std::sqrt(SaturateCast<float>(squares / static_cast<double>(n)) + epsilon);
  for (int64_t i = 0; i < n; ++i) y[i] /= deviation;
}

// The LayerNormalization the Session fused into this ReduceMean (fusion.h), applied when the
// node is the mean over the last axis it was matched as and the per-column constants fit that
// axis; otherwise false, and the Session runs the absorbed nodes.
bool RunFusedLayerNorm(KernelContext& ctx, const Tensor& x, const ReduceSpec& spec) {
  const Epilogue* fused = ctx.epilogue();
  if (fused == nullptr || !fused->spec->layer_norm || x.dtype() != TP::FLOAT || ctx.opset() >= 18 ||
      x.rank() == 0 || spec.out_shape.size() != static_cast<size_t>(x.rank())) {
    return false;
  }
  const int64_t n = x.dim(x.rank() - 1);
  for (int d = 0; d < x.rank(); ++d) {
    if (spec.reduced[d] != (d == x.rank() - 1)) return false;
  }
  const EpilogueSpec& s = *fused->spec;
  const auto fits = [n](const std::vector<float>& v) {
    return v.empty() || static_cast<int64_t>(v.size()) == n;
  };
  if (n == 0 || !fits(s.scale) || !fits(s.shift)) return false;
  Tensor y = Tensor::Uninitialized(TP::FLOAT, x.shape());
  const Epilogue* epilogue = UsableEpilogue(fused, y);
  if (epilogue == nullptr) return false;
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  const float* residual = epilogue->residual ? epilogue->residual->data<float>() : nullptr;
  ParallelRows(x.size() / n, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      LayerNormRow(px + r * n, py + r * n, n, s.layer_norm_epsilon);
    FinishColumns(nullptr, epilogue, 0, end - begin, n, n, py + begin * n,
                  residual ? residual + begin * n : nullptr);
  });
  ctx.output(0) = std::move(y);
  ctx.mark_epilogue_applied();
  return true;
}

KernelFn ReduceKernel(Reduction kind, int input_opset) {
  return [kind, input_opset](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    ReduceSpec spec = PlanReduce(ctx, x, input_opset);
    if (kind == Reduction::kMean && RunFusedLayerNorm(ctx, x, spec)) return;
    Tensor out(x.dtype(), spec.out_shape);
    DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      ReduceT<T, Acc>(x, spec, kind, out);
    });
    ctx.output(0) = std::move(out);
  };
}

void RegisterReduce(KernelRegistry& r, const char* name, Reduction kind, int input_opset) {
  r.Register("", name, 1, kLatest, ReduceKernel(kind, input_opset));
}

// ---- ArgMax / ArgMin / TopK ----

// The tensor viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView ViewAround(const Tensor& x, int axis) {
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= x.dim(d);
  v.n = x.rank() ? x.dim(axis) : 1;
  for (int d = axis + 1; d < x.rank(); ++d) v.inner *= x.dim(d);
  return v;
}

KernelFn ArgKernel(bool is_max) {
  return [is_max](KernelContext& ctx) {
    ctx.AllowAttributes({"axis", "keepdims", "select_last_index"});
    const Tensor& x = ctx.input(0);
    int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
    bool keepdims = ctx.GetInt("keepdims", 1) != 0;
    bool last = ctx.GetInt("select_last_index", 0) != 0;
    auto shape = x.shape();
    if (keepdims) {
      shape[axis] = 1;
    } else {
      shape.erase(shape.begin() + axis);
    }
    Tensor out(TP::INT64, shape);
    AxisView v = ViewAround(x, axis);
    if (v.n == 0) ctx.Fail("cannot take the arg of an empty axis");
    DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      int64_t* po = out.mutable_data<int64_t>();
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const T* p = px + o * v.n * v.inner + i;
          int64_t best = 0;
          for (int64_t k = 1; k < v.n; ++k) {
            T a = p[k * v.inner], b = p[best * v.inner];
            bool better = is_max ? (a > b || (last && a == b)) : (a < b || (last && a == b));
            if (better) best = k;
          }
          po[o * v.inner + i] = best;
        }
      }
    });
    ctx.output(0) = std::move(out);
  };
}

void TopKKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t k;
  if (ctx.opset() < 10) {
    ctx.AllowAttributes({"axis", "k"});
    k = ctx.GetInt("k", -1);
  } else {
    ctx.AllowAttributes({"axis", "largest", "sorted"});
    k = ReadInts(ctx, ctx.input(1)).at(0);
  }
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", -1), x.rank());
  bool largest = ctx.GetInt("largest", 1) != 0;
  AxisView v = ViewAround(x, axis);
  if (k < 0 || k > v.n) ctx.Fail(fmt::format("k={} is out of range for axis size {}", k, v.n));
  auto shape = x.shape();
  shape[axis] = k;
  Tensor values(x.dtype(), shape), indices(TP::INT64, shape);
  DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.mutable_data<T>();
    int64_t* pi = indices.mutable_data<int64_t>();
    std::vector<int64_t> order(v.n);
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const T* p = px + o * v.n * v.inner + i;
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the lower index first, as ONNX Runtime does.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          T va = p[a * v.inner], vb = p[b * v.inner];
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * v.inner + i;
          pv[dst] = p[order[j] * v.inner];
          pi[dst] = order[j];
        }
      }
    }
  });
  ctx.output(0) = std::move(values);
  if (ctx.wants_output(1)) ctx.output(1) = std::move(indices);
}

// ---- softmax family ----

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

template <typename T>
void SoftmaxRow(const T* in, T* out, int64_t n, int64_t stride, SoftmaxKind kind) {
  T max = in[0];
  int64_t arg = 0;
  for (int64_t k = 1; k < n; ++k) {
    if (in[k * stride] > max) {
      max = in[k * stride];
      arg = k;
    }
  }
  if (kind == SoftmaxKind::kHardmax) {
    for (int64_t k = 0; k < n; ++k) out[k * stride] = k == arg ? T(1) : T(0);
    return;
  }
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(in[k * stride] - max));
  if (kind == SoftmaxKind::kLogSoftmax) {
    T log_sum = static_cast<T>(std::log(sum));
    for (int64_t k = 0; k < n; ++k) out[k * stride] = in[k * stride] - max - log_sum;
  } else {
    for (int64_t k = 0; k < n; ++k) {
      out[k * stride] = static_cast<T>(std::exp(static_cast<double>(in[k * stride] - max)) / sum);
    }
  }
}

// Softmax or LogSoftmax of one contiguous float row, 16 lanes at a time: the max, then exp
// computed once and summed by lane (a row of 256 took 3.6 us through double exp twice; the lanes
// sum in a different order than a sequential loop, well within float rounding), then the scale.
PORTTOOL_SIMD_CLONES void SoftmaxRowFloat(const float* in, float* out, int64_t n, bool log) {
  constexpr int64_t kLanes = 16;
  const int64_t whole = n / kLanes * kLanes, tail = n - whole;
  auto load = [](const float* p) PORTTOOL_ALWAYS_INLINE_LAMBDA {
    V16f v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  float block[kLanes];
  // A NaN anywhere makes the sum NaN and so every output, whichever max the lanes keep.
  float max = in[0];
  if (whole > 0) {
    V16f max16 = load(in);
    for (int64_t k = kLanes; k < whole; k += kLanes) {
      const V16f v = load(in + k);
      max16 = v > max16 ? v : max16;
    }
    for (int j = 0; j < kLanes; ++j) max = max16[j] > max ? max16[j] : max;
  }
  for (int64_t k = whole; k < n; ++k) max = in[k] > max ? in[k] : max;
  V16f sum16{};
  for (int64_t k = 0; k < whole; k += kLanes) {
    const V16f v = ExpV(load(in + k) - max);
    sum16 += v;
    std::memcpy(out + k, &v, sizeof v);
  }
  if (tail > 0) {  // padding with -inf adds exp(-inf) = 0 to the sum
    std::fill(block, block + kLanes, -__builtin_inff());
    std::memcpy(block, in + whole, tail * sizeof(float));
    const V16f v = ExpV(load(block) - max);
    sum16 += v;
    std::memcpy(block, &v, sizeof v);
    std::memcpy(out + whole, block, tail * sizeof(float));
  }
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += sum16[j];
  if (log) {
    const float shift = max + std::log(sum);
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] - shift;
    return;
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) out[i] *= inv;
}

// Contiguous rows shorter than the 16 lanes (UltraFace's 4420 two-class scores): the row path
// spent a 16-lane exp on each row's 2 values (45 ns a row). Here every row's shifted values go
// through the exp 16 at a time across rows, then each row is summed in order and scaled: what
// the row path computes for a short row (its lane sum adds the row's values in order, then
// zeros), so the bits are the same.
PORTTOOL_SIMD_CLONES void SoftmaxShortRowsFloat(const float* in, float* out, int64_t rows,
                                                int64_t n, bool log) {
  constexpr int64_t kLanes = 16;
  auto row_max = [n](const float* row) PORTTOOL_ALWAYS_INLINE_LAMBDA {
    float max = row[0];
    for (int64_t k = 0; k < n; ++k) max = row[k] > max ? row[k] : max;
    return max;
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float max = row_max(in + r * n);
    for (int64_t k = 0; k < n; ++k) out[r * n + k] = in[r * n + k] - max;
  }
  const int64_t total = rows * n, whole = total / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes) {
    V16f v;
    std::memcpy(&v, out + i, sizeof v);
    v = ExpV(v);
    std::memcpy(out + i, &v, sizeof v);
  }
  if (whole < total) {
    V16f v{};
    std::memcpy(&v, out + whole, (total - whole) * sizeof(float));
    v = ExpV(v);
    std::memcpy(out + whole, &v, (total - whole) * sizeof(float));
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * n;
    float sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += row[k];
    if (log) {
      const float shift = row_max(in + r * n) + std::log(sum);
      for (int64_t k = 0; k < n; ++k) row[k] = in[r * n + k] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t k = 0; k < n; ++k) row[k] *= inv;
    }
  }
}

KernelFn SoftmaxKernel(SoftmaxKind kind) {
  return [kind](KernelContext& ctx) {
    ctx.AllowAttributes({"axis"});
    const Tensor& x = ctx.input(0);
    bool legacy = ctx.opset() < 13;
    int axis = NormalizeAxis(ctx, ctx.GetInt("axis", legacy ? 1 : -1), x.rank());
    AxisView v = ViewAround(x, axis);
    if (legacy) {  // flattened to [outer, everything from axis on]
      v.n *= v.inner;
      v.inner = 1;
    }
    Tensor out = Tensor::Uninitialized(x.dtype(), x.shape());
    DispatchFloat(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* po = out.mutable_data<T>();
      if (v.n == 0) return;
      ParallelRows(v.outer * v.inner, v.n, [&](int64_t b, int64_t e) {
        if constexpr (std::is_same_v<T, float>) {
          if (v.inner == 1 && v.n < 16 && kind != SoftmaxKind::kHardmax) {
            SoftmaxShortRowsFloat(px + b * v.n, po + b * v.n, e - b, v.n,
                                  kind == SoftmaxKind::kLogSoftmax);
            return;
          }
        }
        for (int64_t r = b; r < e; ++r) {
          int64_t base = (r / v.inner) * v.n * v.inner + r % v.inner;
          if constexpr (std::is_same_v<T, float>) {
            if (v.inner == 1 && kind != SoftmaxKind::kHardmax) {
              SoftmaxRowFloat(px + base, po + base, v.n, kind == SoftmaxKind::kLogSoftmax);
              continue;
            }
          }
          SoftmaxRow(px + base, po + base, v.n, v.inner, kind);
        }
      });
    });
    ctx.output(0) = std::move(out);
  };
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& r) {
  RegisterReduce(r, "ReduceSum", Reduction::kSum, 13);
  RegisterReduce(r, "ReduceMean", Reduction::kMean, 18);
  r.AcceptEpilogue("", "ReduceMean");  // the head of a LayerNormalization written as nodes
  RegisterReduce(r, "ReduceMax", Reduction::kMax, 18);
  RegisterReduce(r, "ReduceMin", Reduction::kMin, 18);
  RegisterReduce(r, "ReduceProd", Reduction::kProd, 18);
  RegisterReduce(r, "ReduceL1", Reduction::kL1, 18);
  RegisterReduce(r, "ReduceL2", Reduction::kL2, 18);
  RegisterReduce(r, "ReduceLogSum", Reduction::kLogSum, 18);
  RegisterReduce(r, "ReduceLogSumExp", Reduction::kLogSumExp, 18);
  RegisterReduce(r, "ReduceSumSquare", Reduction::kSumSquare, 18);
  r.Register("", "ArgMax", 1, kLatest, ArgKernel(true));
  r.Register("", "ArgMin", 1, kLatest, ArgKernel(false));
  r.Register("", "TopK", 1, kLatest, TopKKernel);
  r.Register("", "Softmax", 1, kLatest, SoftmaxKernel(SoftmaxKind::kSoftmax));
  r.Register("", "LogSoftmax", 1, kLatest, SoftmaxKernel(SoftmaxKind::kLogSoftmax));
  r.Register("", "Hardmax", 1, kLatest, SoftmaxKernel(SoftmaxKind::kHardmax));
}

}  // namespace porttool::runtime
