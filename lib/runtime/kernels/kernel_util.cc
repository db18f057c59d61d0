#include "lib/runtime/kernels/kernel_util.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/ir/dtype.h"
#include "lib/runtime/parallel.h"
#include "lib/util/checked_math.h"

namespace porttool::runtime::kernels {

void FailDtype(const KernelContext& ctx, int32_t dtype) {
  ctx.Fail(fmt::format("element type {} is not supported by this kernel", ir::DtypeName(dtype)));
}

int NormalizeAxis(const KernelContext& ctx, int64_t axis, int rank) {
  // A rank-0 tensor has no axis at all: accepting 0 there let Concat index an empty shape.
  if (axis < -rank || axis >= rank) {
    ctx.Fail(fmt::format("axis {} is out of range for a rank-{} input", axis, rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t CheckedIndex(const KernelContext& ctx, int64_t index, int64_t dim, const char* what) {
  if (index < -dim || index >= dim) {
    ctx.Fail(fmt::format("{} {} is out of range for a dimension of size {}", what, index, dim));
  }
  return index < 0 ? index + dim : index;
}

std::vector<int64_t> ReadInts(const KernelContext& ctx, const Tensor& t) {
  if (t.dtype() == TP::INT64) return {t.data<int64_t>(), t.data<int64_t>() + t.size()};
  if (t.dtype() == TP::INT32) return {t.data<int32_t>(), t.data<int32_t>() + t.size()};
  ctx.Fail(fmt::format("expected an int32/int64 tensor, got {}", t.DebugString()));
}

double ReadScalar(const KernelContext& ctx, const Tensor& t) {
  if (t.size() != 1) ctx.Fail(fmt::format("expected a single value, got {}", t.DebugString()));
  double v = 0;
  DispatchAll(ctx, t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    v = static_cast<double>(t.data<T>()[0]);
  });
  return v;
}

int64_t FloatToIndex(const KernelContext& ctx, double v, const char* what) {
  // 2^63 is exact in double; anything at or past it (and NaN, which fails both) is out of range.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(v > -kLimit && v < kLimit))
    ctx.Fail(fmt::format("{} is {}: not an integer value", what, v));
  return static_cast<int64_t>(v);
}

int64_t ReadIntScalar(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.size() != 1) {
    ctx.Fail(fmt::format("{}: expected a single value, got {}", what, t.DebugString()));
  }
  if (t.dtype() == TP::INT64) return t.data<int64_t>()[0];
  if (t.dtype() == TP::UINT64) {
    uint64_t u = t.data<uint64_t>()[0];
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      ctx.Fail(fmt::format("{} is {}: past int64", what, u));
    }
    return static_cast<int64_t>(u);
  }
  return FloatToIndex(ctx, ReadScalar(ctx, t), what);
}

std::vector<int64_t> BroadcastShape(const KernelContext& ctx,
                                    const std::vector<const Tensor*>& inputs) {
  // Equal shapes (most elementwise nodes) broadcast to themselves: no copies of every shape.
  if (!inputs.empty() && std::all_of(inputs.begin(), inputs.end(), [&](const Tensor* t) {
        return t->shape() == inputs[0]->shape();
      })) {
    return inputs[0]->shape();
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor* t : inputs) shapes.push_back(t->shape());
  return BroadcastShapes(ctx, shapes);
}

std::vector<int64_t> BroadcastShapes(const KernelContext& ctx,
                                     const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    size_t shift = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[shift + i];
      if (s[i] < 0) ctx.Fail(fmt::format("negative dim in shape {}", util::DimsToString(s)));
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) {
        std::vector<std::string> texts;
        for (const auto& u : shapes) texts.push_back(util::DimsToString(u));
        ctx.Fail(fmt::format("shapes cannot be broadcast together: {}", fmt::join(texts, ", ")));
      }
      o = s[i];
    }
  }
  return out;
}

Broadcaster::Broadcaster(const std::vector<int64_t>& out_shape,
                         const std::vector<std::vector<int64_t>>& in_shapes) {
  const size_t rank = out_shape.size();
  const size_t n_in = in_shapes.size();
  // Per input, element strides in the output's rank (0 where broadcast).
  std::vector<std::vector<int64_t>> strides(n_in, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < n_in; ++k) {
    const auto& s = in_shapes[k];
    size_t shift = rank - s.size();
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      strides[k][shift + i] = s[i] == 1 ? 0 : stride;
      stride *= s[i];
    }
  }
  // Merge dim i into the run that follows it when every input is either broadcast along both or
  // contiguous across both.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> merged(n_in);
  for (size_t i = 0; i < rank; ++i) {
    if (out_shape[i] == 1) continue;
    bool can_merge = !dims.empty();
    for (size_t k = 0; k < n_in && can_merge; ++k) {
      int64_t prev = merged[k].back();
      int64_t cur = strides[k][i];
      can_merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * out_shape[i]);
    }
    if (can_merge) {
      dims.back() *= out_shape[i];
      for (size_t k = 0; k < n_in; ++k) merged[k].back() = strides[k][i];
    } else {
      dims.push_back(out_shape[i]);
      for (size_t k = 0; k < n_in; ++k) merged[k].push_back(strides[k][i]);
    }
  }
  inner_steps_.assign(n_in, 0);
  if (dims.empty()) return;
  inner_ = dims.back();
  for (size_t k = 0; k < n_in; ++k) inner_steps_[k] = merged[k].back() != 0 ? 1 : 0;
  dims.pop_back();
  outer_dims_ = dims;
  outer_strides_.resize(n_in);
  for (size_t k = 0; k < n_in; ++k) {
    outer_strides_[k].assign(merged[k].begin(), merged[k].end() - 1);
  }
  for (int64_t d : outer_dims_) rows_ *= d;
}

void Broadcaster::RowOffsets(int64_t r, std::vector<int64_t>& offsets,
                             std::vector<int64_t>& index) const {
  std::fill(offsets.begin(), offsets.end(), 0);
  index.assign(outer_dims_.size(), 0);
  // An empty output has no rows: a 0 outer dim would be a divisor below (SIGFPE, issue 54).
  if (rows_ == 0) return;
  for (size_t i = outer_dims_.size(); i-- > 0;) {
    index[i] = r % outer_dims_[i];
    r /= outer_dims_[i];
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] += index[i] * outer_strides_[k][i];
  }
}

void Broadcaster::NextRow(std::vector<int64_t>& index, std::vector<int64_t>& offsets) const {
  for (size_t i = outer_dims_.size(); i-- > 0;) {
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] += outer_strides_[k][i];
    if (++index[i] < outer_dims_[i]) return;
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] -= outer_strides_[k][i] * outer_dims_[i];
    index[i] = 0;
  }
}

Tensor LegacyBroadcastOperand(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (ctx.GetInt("broadcast", 0) == 0) return b;
  int64_t axis = ctx.GetInt("axis", a.rank() - b.rank());
  if (axis < 0) axis += a.rank();
  if (axis < 0 || axis + b.rank() > a.rank()) {
    ctx.Fail(fmt::format("legacy broadcast of {} into {} at axis {} is out of range",
                         b.DebugString(), a.DebugString(), axis));
  }
  std::vector<int64_t> shape(axis, 1);
  shape.insert(shape.end(), b.shape().begin(), b.shape().end());
  shape.resize(a.rank(), 1);
  return b.Reshaped(shape);
}

namespace {
// Waking a sleeping pool thread and waiting for it costs 10-20 us on a 2-core VM: a 70K-element
// Add took 12 us inline and 18 us split in two. So a chunk gets at least ~30 us of work: 64K
// elements of an elementwise op, or 512K multiply-adds of a GEMM-like kernel (4M before the
// pool spun: a 4x76x32x1 conv net, whose convs are 0.4-3M each, then never used a second
// thread; at 512K it runs in 0.73 of its 1-thread time, and PP-OCR cls no slower).
constexpr int64_t kMinChunkElements = 1 << 16;
constexpr int64_t kMinChunkMacs = 1 << 19;

void ParallelWork(int64_t items, int64_t work_per_item, int64_t min_chunk_work,
                  const std::function<void(int64_t, int64_t)>& fn) {
  // No items (an empty tensor's rows): nothing to call fn for, and callers may compute a row's
  // offsets from `begin` by dividing by a dim that is 0 (issue 54).
  if (items <= 0) return;
  const int64_t per_item = std::max<int64_t>(work_per_item, 1);
  if (items < 2 || items * per_item < 2 * min_chunk_work) {
    fn(0, items);
    return;
  }
  ParallelFor(items, std::max<int64_t>(1, min_chunk_work / per_item), fn);
}
}  // namespace

void ParallelElements(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  ParallelRows(n, 1, fn);
}

void ParallelRows(int64_t rows, int64_t row_elements,
                  const std::function<void(int64_t, int64_t)>& fn) {
  ParallelWork(rows, row_elements, kMinChunkElements, fn);
}

void ParallelMacs(int64_t items, int64_t macs_per_item,
                  const std::function<void(int64_t, int64_t)>& fn) {
  ParallelWork(items, macs_per_item, kMinChunkMacs, fn);
}

}  // namespace porttool::runtime::kernels
