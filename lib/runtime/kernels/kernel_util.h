// Helpers shared by the kernel files: dtype dispatch, multidirectional (numpy) broadcasting,
// axis normalisation and reading small integer tensors (shapes, axes, pads). Private to
// lib/runtime/kernels; nothing outside the executor includes it.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime::kernels {

using TP = onnx::TensorProto;

// The ONNX element type of a C type (0 for types that have none).
template <typename T>
inline constexpr int32_t kDtypeOf = 0;

// The one dtype dispatch: calls fn(T{}) with T the C type of `dtype` among Ts, and rejects any
// other dtype with ctx.Fail naming it. A kernel lists the types it implements:
// Dispatch<float, double, int8_t, uint8_t>(ctx, x.dtype(), run).
template <typename... Ts, typename Fn>
void Dispatch(const KernelContext& ctx, int32_t dtype, Fn&& fn);

// The common subsets, by name. Calls fn(T{}) with T the C type of `dtype`.
template <typename Fn>
void DispatchFloat(const KernelContext& ctx, int32_t dtype, Fn&& fn);
template <typename Fn>
void DispatchNumeric(const KernelContext& ctx, int32_t dtype, Fn&& fn);  // floats and ints
template <typename Fn>
void DispatchAll(const KernelContext& ctx, int32_t dtype, Fn&& fn);  // numeric and bool
template <typename Fn>
void DispatchSigned(const KernelContext& ctx, int32_t dtype, Fn&& fn);  // floats, signed ints

[[noreturn]] void FailDtype(const KernelContext& ctx, int32_t dtype);

// For kernels that only move elements: calls fn(U{}) with U the unsigned integer type of the
// element size (1, 2, 4 or 8 bytes); false for any other size (strings, sub-byte types).
template <typename Fn>
bool DispatchBySize(size_t element_size, Fn&& fn);

// A floating value converted to T with saturation (NaN -> 0 for integers, the range ends for
// values beyond them). A plain cast of an out-of-range value is undefined behaviour, and the
// values come from model data (pad values, extrapolation values, interpolation overshoot).
template <typename T, typename F>
T SaturateCast(F v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v > static_cast<F>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::infinity();
    if (v < static_cast<F>(std::numeric_limits<T>::lowest())) {
      return -std::numeric_limits<T>::infinity();
    }
    return static_cast<T>(v);
  } else {
    if (!(v == v)) return T(0);
    // 2^(digits) is exact in any floating type; comparing against it avoids the rounding of max().
    const F upper = std::ldexp(F(1), std::numeric_limits<T>::digits);
    if (v >= upper) return std::numeric_limits<T>::max();
    if (v <= static_cast<F>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    return static_cast<T>(v);
  }
}

// Normalises a possibly negative axis into [0, rank); fails naming the node when out of range.
int NormalizeAxis(const KernelContext& ctx, int64_t axis, int rank);
// Reads an int32/int64 tensor as int64 values.
std::vector<int64_t> ReadInts(const KernelContext& ctx, const Tensor& t);
// Reads a numeric tensor as doubles (scalars for Clip bounds, ConstantOfShape values...).
double ReadScalar(const KernelContext& ctx, const Tensor& t);
// A single value used as an integer (a size, count, depth, axis or trip count): integer tensors
// exactly, floating ones truncated toward zero. NaN, infinities and values outside int64 fail
// naming `what` (a cast of them is undefined behaviour: OneHot's depth NaN, fuzz_executor).
int64_t ReadIntScalar(const KernelContext& ctx, const Tensor& t, const char* what);
// A floating value used as an integer, by the same rule.
int64_t FloatToIndex(const KernelContext& ctx, double v, const char* what);

// The numpy broadcast of several shapes; fails naming the node when they are incompatible.
std::vector<int64_t> BroadcastShape(const KernelContext& ctx,
                                    const std::vector<const Tensor*>& inputs);
// The same on bare shapes (Expand's target shape is data, not a tensor to allocate).
std::vector<int64_t> BroadcastShapes(const KernelContext& ctx,
                                     const std::vector<std::vector<int64_t>>& shapes);

// Iteration plan for an N-ary broadcast: adjacent dims with the same broadcast pattern are merged
// so the innermost run is as long as possible. For each run, `fn(out_offset, in_offsets, n,
// in_steps)` gets the start element of the output and of every input, the run length and each
// input's step within the run (0 when broadcast along it, 1 otherwise).
class Broadcaster {
 public:
  Broadcaster(const std::vector<int64_t>& out_shape,
              const std::vector<std::vector<int64_t>>& in_shapes);
  int64_t rows() const { return rows_; }
  int64_t row_length() const { return inner_; }
  const std::vector<int64_t>& inner_steps() const { return inner_steps_; }
  // Start offsets of row `r` for each input, and the row's index over the outer dims.
  void RowOffsets(int64_t r, std::vector<int64_t>& offsets, std::vector<int64_t>& index) const;
  // Moves `index` and `offsets` from a row to the next with additions only: RowOffsets'
  // divisions cost more than a short row's work (a [4,256,4] Max with a per-channel floor).
  void NextRow(std::vector<int64_t>& index, std::vector<int64_t>& offsets) const;

 private:
  std::vector<int64_t> outer_dims_;                  // merged dims except the innermost
  std::vector<std::vector<int64_t>> outer_strides_;  // per input
  std::vector<int64_t> inner_steps_;
  int64_t inner_ = 1;
  int64_t rows_ = 1;
};

// Walks `plan` in contiguous runs across the thread pool: fn(in, out, count) with in[k] the
// element offset of input k at the run's start (its step along the run is
// plan.inner_steps()[k]) and out the output's. Rows are cut into segments so that a tensor
// times a scalar (one row of every element) still splits across threads.
template <typename Fn>
void ForEachBroadcastRun(const Broadcaster& plan, const Fn& fn);

// out[i] = op(a[i], b[i]) with broadcasting; `out` must already have the broadcast shape.
template <typename A, typename B, typename O, typename Op>
void BinaryBroadcast(const Tensor& a, const Tensor& b, Tensor& out, Op op);

// Opset < 7 binary ops: with broadcast=1, B's dims align with A's starting at `axis` (default:
// trailing) instead of numpy's right alignment. Returns B reshaped so the numpy rules give that
// result (B itself when the attribute is absent). Call only when ctx.opset() < 7.
Tensor LegacyBroadcastOperand(const KernelContext& ctx, const Tensor& a, const Tensor& b);

// Row-major element strides of `shape`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);
// Resolves a possibly negative index into [0, dim); fails naming the node, `what` and the value
// when it is out of range.
int64_t CheckedIndex(const KernelContext& ctx, int64_t index, int64_t dim, const char* what);

// The size of the pieces a GEMM-like kernel splits its output into: about kWorkPieces pieces of
// at least `min_piece`, a function of the problem alone. Were it a function of the thread count,
// the BLAS call computing an output element would change shape with it, and with the shape its
// kernel and summation order (rec's pointwise convs differed in the last bit at 1 and 2 threads):
// outputs, calibration tables and folded constants must be the same at any thread count.
inline constexpr int64_t kWorkPieces = 8;
inline int64_t PieceSize(int64_t total, int64_t min_piece) {
  return std::max(min_piece, (total + kWorkPieces - 1) / kWorkPieces);
}

// Splits [0, n) across the thread pool when n is large enough to be worth it.
void ParallelElements(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
// The same over `rows` rows of `row_elements` elements (or multiply-adds) each: the split is
// worth it by the work, not the row count (256 rows of 1536 bias-added values are 393K elements;
// 8 planes of a tiny depthwise conv are not worth waking a thread for).
void ParallelRows(int64_t rows, int64_t row_elements,
                  const std::function<void(int64_t, int64_t)>& fn);
// The same for GEMM-like work measured in multiply-adds, which run ~50x faster per unit than an
// elementwise op: a chunk needs half a million of them to pay for handing it to a pool thread.
void ParallelMacs(int64_t items, int64_t macs_per_item,
                  const std::function<void(int64_t, int64_t)>& fn);

// ---- implementation of the templates ----

template <>
inline constexpr int32_t kDtypeOf<float> = TP::FLOAT;
template <>
inline constexpr int32_t kDtypeOf<double> = TP::DOUBLE;
template <>
inline constexpr int32_t kDtypeOf<int8_t> = TP::INT8;
template <>
inline constexpr int32_t kDtypeOf<int16_t> = TP::INT16;
template <>
inline constexpr int32_t kDtypeOf<int32_t> = TP::INT32;
template <>
inline constexpr int32_t kDtypeOf<int64_t> = TP::INT64;
template <>
inline constexpr int32_t kDtypeOf<uint8_t> = TP::UINT8;
template <>
inline constexpr int32_t kDtypeOf<uint16_t> = TP::UINT16;
template <>
inline constexpr int32_t kDtypeOf<uint32_t> = TP::UINT32;
template <>
inline constexpr int32_t kDtypeOf<uint64_t> = TP::UINT64;
template <>
inline constexpr int32_t kDtypeOf<bool> = TP::BOOL;

template <typename... Ts, typename Fn>
void Dispatch(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  static_assert(((kDtypeOf<Ts> != 0) && ...), "a dispatched type needs a kDtypeOf");
  const bool done = ((dtype == kDtypeOf<Ts> ? (fn(Ts{}), true) : false) || ...);
  if (!done) FailDtype(ctx, dtype);
}

template <typename Fn>
void DispatchFloat(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  Dispatch<float, double>(ctx, dtype, fn);
}

template <typename Fn>
void DispatchSigned(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  Dispatch<float, double, int8_t, int16_t, int32_t, int64_t>(ctx, dtype, fn);
}

template <typename Fn>
void DispatchNumeric(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  Dispatch<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>(
      ctx, dtype, fn);
}

template <typename Fn>
void DispatchAll(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  Dispatch<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
           bool>(ctx, dtype, fn);
}

template <typename Fn>
bool DispatchBySize(size_t element_size, Fn&& fn) {
  switch (element_size) {
    case 1:
      return fn(uint8_t{}), true;
    case 2:
      return fn(uint16_t{}), true;
    case 4:
      return fn(uint32_t{}), true;
    case 8:
      return fn(uint64_t{}), true;
    default:
      return false;
  }
}

template <typename A, typename B, typename O, typename Op>
void BinaryBroadcast(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.mutable_data<O>();
  if (a.shape() == b.shape()) {
    ParallelElements(out.size(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = op(pa[i], pb[i]);
    });
    return;
  }
  Broadcaster plan(out.shape(), {a.shape(), b.shape()});
  const int64_t sa = plan.inner_steps()[0], sb = plan.inner_steps()[1];
  ForEachBroadcastRun(plan, [&](const int64_t* in, int64_t at, int64_t count) {
    const A* ra = pa + in[0];
    const B* rb = pb + in[1];
    O* ro = po + at;
    // Separate loops per step pattern so each one vectorises.
    if (sa && sb) {
      for (int64_t i = 0; i < count; ++i) ro[i] = op(ra[i], rb[i]);
    } else if (sa) {
      const B vb = rb[0];
      for (int64_t i = 0; i < count; ++i) ro[i] = op(ra[i], vb);
    } else if (sb) {
      const A va = ra[0];
      for (int64_t i = 0; i < count; ++i) ro[i] = op(va, rb[i]);
    } else {
      const O v = op(ra[0], rb[0]);
      for (int64_t i = 0; i < count; ++i) ro[i] = v;
    }
  });
}

template <typename Fn>
void ForEachBroadcastRun(const Broadcaster& plan, const Fn& fn) {
  const int64_t n = plan.row_length();
  const auto& steps = plan.inner_steps();
  constexpr int64_t kSegment = 1 << 14;
  const int64_t segments = std::max<int64_t>(1, (n + kSegment - 1) / kSegment);
  const int64_t seg_len = (n + segments - 1) / segments;
  ParallelRows(plan.rows() * segments, seg_len, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> off(steps.size()), index;
    if (segments == 1) {  // whole rows, walked in order
      plan.RowOffsets(begin, off, index);
      for (int64_t r = begin; r < end; ++r) {
        if (r > begin) plan.NextRow(index, off);
        fn(off.data(), r * n, n);
      }
      return;
    }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / segments;
      const int64_t i0 = (item % segments) * seg_len, i1 = std::min(n, i0 + seg_len);
      if (i1 <= i0) continue;
      plan.RowOffsets(r, off, index);
      for (size_t k = 0; k < off.size(); ++k) off[k] += i0 * steps[k];
      fn(off.data(), r * n + i0, i1 - i0);
    }
  });
}

}  // namespace porttool::runtime::kernels
