// Indexing kernels: GatherND, ScatterND, ScatterElements, Scatter, OneHot, Compress, NonZero,
// Unique, Trilu, CumSum, ReverseSequence, EyeLike. Pure data movement goes through byte copies
// so every dtype works; reductions and value tests dispatch on the element type. Every index is
// bounds-checked: an out-of-range index is an Error naming the node, never a wild write.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "lib/ir/dtype.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

int64_t Product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= v[i];
  return p;
}

const uint8_t* Bytes(const Tensor& t) { return static_cast<const uint8_t*>(t.raw()); }
uint8_t* MutableBytes(Tensor& t) { return static_cast<uint8_t*>(t.mutable_raw()); }

// ---- GatherND / ScatterND ----

// Offset (in elements of `data`) of the slice an index tuple of length k addresses.
int64_t TupleOffset(const KernelContext& ctx, const int64_t* tuple, int64_t k,
                    const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    size_t first_dim) {
  int64_t off = 0;
  for (int64_t j = 0; j < k; ++j) {
    off += CheckedIndex(ctx, tuple[j], dims[first_dim + j], "index") * strides[first_dim + j];
  }
  return off;
}

void GatherNDKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"batch_dims"});
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t b = ctx.GetInt("batch_dims", 0);
  const int r = data.rank(), q = indices.rank();
  if (q < 1 || b < 0 || b >= std::min(r, q)) {
    ctx.Fail(fmt::format("batch_dims {} is invalid for data rank {} and indices rank {}", b, r, q));
  }
  const int64_t k = indices.dim(q - 1);
  if (k < 1 || b + k > r) ctx.Fail(fmt::format("indices last dim {} exceeds data rank", k));
  for (int64_t d = 0; d < b; ++d) {
    if (data.dim(d) != indices.dim(d)) ctx.Fail("batch dims of data and indices differ");
  }
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + b);
  shape.insert(shape.end(), indices.shape().begin() + b, indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + b + k, data.shape().end());
  Tensor out(data.dtype(), shape);
  const auto idx = ReadInts(ctx, indices);
  const auto strides = RowMajorStrides(data.shape());
  const size_t elem = ir::DtypeSize(data.dtype());
  const int64_t batches = Product(data.shape(), 0, b);
  const int64_t tuples = Product(indices.shape(), b, q - 1);
  const int64_t slice = Product(data.shape(), b + k, r) * elem;
  const int64_t data_batch = Product(data.shape(), b, r);
  for (int64_t n = 0; n < batches; ++n) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t* tuple = idx.data() + (n * tuples + t) * k;
      int64_t off = n * data_batch + TupleOffset(ctx, tuple, k, data.shape(), strides, b);
      std::memcpy(MutableBytes(out) + (n * tuples + t) * slice, Bytes(data) + off * elem, slice);
    }
  }
  ctx.output(0) = std::move(out);
}

// Applies `reduction` ("none", "add", "mul", "max", "min") of `n` elements from `src` into `dst`.
void Reduce(const KernelContext& ctx, const std::string& reduction, int32_t dtype, uint8_t* dst,
            const uint8_t* src, int64_t n) {
  if (reduction == "none") {
    std::memcpy(dst, src, n * ir::DtypeSize(dtype));
    return;
  }
  DispatchAll(ctx, dtype, [&](auto tag) {
    using T = decltype(tag);
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) {
      if (reduction == "add") {
        d[i] = static_cast<T>(d[i] + s[i]);
      } else if (reduction == "mul") {
        d[i] = static_cast<T>(d[i] * s[i]);
      } else if (reduction == "max") {
        d[i] = std::max(d[i], s[i]);
      } else {
        d[i] = std::min(d[i], s[i]);
      }
    }
  });
}

std::string ScatterReduction(const KernelContext& ctx) {
  std::string reduction = ctx.GetString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul") {
    ctx.Fail(fmt::format("reduction '{}' is not defined at opset {} (none, add, mul)", reduction,
                         ctx.opset()));
  }
  return reduction;
}

void ScatterNDKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"reduction"});
  const std::string reduction = ScatterReduction(ctx);
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int r = data.rank(), q = indices.rank();
  if (q < 1) ctx.Fail("indices must have rank >= 1");
  const int64_t k = indices.dim(q - 1);
  if (k > r) ctx.Fail(fmt::format("indices last dim {} exceeds data rank {}", k, r));
  std::vector<int64_t> want(indices.shape().begin(), indices.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != want || updates.dtype() != data.dtype()) {
    ctx.Fail(fmt::format("updates must be {} of shape [{}], got {}", ir::DtypeName(data.dtype()),
                         fmt::join(want, ","), updates.DebugString()));
  }
  Tensor out = data.Clone();
  const auto idx = ReadInts(ctx, indices);
  const auto strides = RowMajorStrides(data.shape());
  const size_t elem = ir::DtypeSize(data.dtype());
  const int64_t slice = Product(data.shape(), k, r);
  const int64_t tuples = Product(indices.shape(), 0, q - 1);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = TupleOffset(ctx, idx.data() + t * k, k, data.shape(), strides, 0);
    Reduce(ctx, reduction, data.dtype(), MutableBytes(out) + off * elem,
           Bytes(updates) + t * slice * elem, slice);
  }
  ctx.output(0) = std::move(out);
}

// ---- ScatterElements / Scatter ----

void ScatterElementsKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis", "reduction"});
  const std::string reduction = ScatterReduction(ctx);
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), data.rank());
  if (indices.shape() != updates.shape() || indices.rank() != data.rank() ||
      updates.dtype() != data.dtype()) {
    ctx.Fail(fmt::format("indices {} and updates {} must have the same shape and data's rank",
                         indices.DebugString(), updates.DebugString()));
  }
  Tensor out = data.Clone();
  const auto idx = ReadInts(ctx, indices);
  const auto out_strides = RowMajorStrides(data.shape());
  const auto idx_strides = RowMajorStrides(indices.shape());
  const size_t elem = ir::DtypeSize(data.dtype());
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t off = 0, rem = i;
    for (int d = 0; d < data.rank(); ++d) {
      int64_t c = rem / idx_strides[d];
      rem %= idx_strides[d];
      if (d == axis) c = CheckedIndex(ctx, idx[i], data.dim(d), "index");
      if (c >= data.dim(d)) ctx.Fail("indices shape exceeds data shape");
      off += c * out_strides[d];
    }
    Reduce(ctx, reduction, data.dtype(), MutableBytes(out) + off * elem, Bytes(updates) + i * elem,
           1);
  }
  ctx.output(0) = std::move(out);
}

// ---- OneHot ----

void OneHotKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& indices = ctx.input(0);
  const int64_t depth = ReadIntScalar(ctx, ctx.input(1), "depth");
  const Tensor& values = ctx.input(2);
  if (depth < 1) ctx.Fail(fmt::format("depth must be positive, got {}", depth));
  if (values.size() != 2) ctx.Fail("values must hold [off_value, on_value]");
  const int rank = indices.rank() + 1;
  const int axis = NormalizeAxis(ctx, ctx.GetInt("axis", -1), rank);
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + axis, depth);
  Tensor out(values.dtype(), shape);
  std::vector<double> idx(indices.size());
  DispatchNumeric(ctx, indices.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < indices.size(); ++i) idx[i] = static_cast<double>(indices.data<T>()[i]);
  });
  const int64_t outer = Product(indices.shape(), 0, axis);
  const int64_t inner = Product(indices.shape(), axis, indices.rank());
  const size_t elem = ir::DtypeSize(values.dtype());
  uint8_t* dst = MutableBytes(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        auto v = FloatToIndex(ctx, idx[o * inner + i], "an index");
        if (v < 0) v += depth;
        std::memcpy(dst + ((o * depth + d) * inner + i) * elem, Bytes(values) + (v == d) * elem,
                    elem);
      }
    }
  }
  ctx.output(0) = std::move(out);
}

// ---- Compress / NonZero ----

void CompressKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  Tensor x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != TP::BOOL || cond.rank() != 1) ctx.Fail("condition must be a 1-D bool");
  int axis = 0;
  if (ctx.HasAttribute("axis")) {
    axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
  } else {
    x = x.Reshaped({x.size()});
  }
  if (cond.size() > x.dim(axis)) ctx.Fail("condition is longer than the compressed axis");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.size(); ++i) {
    if (cond.data<bool>()[i]) keep.push_back(i);
  }
  std::vector<int64_t> shape = x.shape();
  shape[axis] = static_cast<int64_t>(keep.size());
  Tensor out(x.dtype(), shape);
  const int64_t outer = Product(x.shape(), 0, axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.rank()) * ir::DtypeSize(x.dtype());
  const int64_t n = static_cast<int64_t>(keep.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(MutableBytes(out) + (o * n + j) * inner,
                  Bytes(x) + (o * x.dim(axis) + keep[j]) * inner, inner);
    }
  }
  ctx.output(0) = std::move(out);
}

void NonZeroKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  DispatchAll(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < x.size(); ++i) {
      if (x.data<T>()[i] != T{}) hits.push_back(i);
    }
  });
  // A scalar counts as a 1-element vector, as in ONNX Runtime.
  const std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.shape();
  const auto strides = RowMajorStrides(dims);
  const int64_t n = static_cast<int64_t>(hits.size());
  Tensor out(TP::INT64, {static_cast<int64_t>(dims.size()), n});
  int64_t* p = out.mutable_data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    for (size_t d = 0; d < dims.size(); ++d) p[d * n + j] = hits[j] / strides[d] % dims[d];
  }
  ctx.output(0) = std::move(out);
}

// ---- Unique ----

void UniqueKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis", "sorted"});
  Tensor x = ctx.input(0);
  const bool sorted = ctx.GetInt("sorted", 1) != 0;
  int axis = 0;
  if (ctx.HasAttribute("axis")) {
    axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
  } else {
    x = x.Reshaped({x.size()});
  }
  const int64_t outer = Product(x.shape(), 0, axis), dim = x.dim(axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.rank());
  std::vector<int64_t> firsts, inverse(dim), counts;  // firsts: slice index of each unique
  DispatchAll(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    // Lexicographic comparison of slices i and j along the axis.
    auto compare = [&](int64_t i, int64_t j) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t k = 0; k < inner; ++k) {
          T a = p[(o * dim + i) * inner + k], b = p[(o * dim + j) * inner + k];
          if (a < b) return -1;
          if (b < a) return 1;
        }
      }
      return 0;
    };
    for (int64_t i = 0; i < dim; ++i) {
      auto it =
          std::find_if(firsts.begin(), firsts.end(), [&](int64_t f) { return compare(f, i) == 0; });
      if (it == firsts.end()) {
        firsts.push_back(i);
        counts.push_back(0);
        it = firsts.end() - 1;
      }
      inverse[i] = it - firsts.begin();
      ++counts[inverse[i]];
    }
    if (!sorted) return;
    std::vector<int64_t> order(firsts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return compare(firsts[a], firsts[b]) < 0; });
    std::vector<int64_t> rank(order.size()), new_firsts, new_counts;
    for (size_t r = 0; r < order.size(); ++r) {
      rank[order[r]] = static_cast<int64_t>(r);
      new_firsts.push_back(firsts[order[r]]);
      new_counts.push_back(counts[order[r]]);
    }
    for (auto& v : inverse) v = rank[v];
    firsts = std::move(new_firsts);
    counts = std::move(new_counts);
  });
  const int64_t u = static_cast<int64_t>(firsts.size());
  std::vector<int64_t> shape = x.shape();
  shape[axis] = u;
  Tensor y(x.dtype(), shape);
  const size_t row = inner * ir::DtypeSize(x.dtype());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < u; ++j) {
      std::memcpy(MutableBytes(y) + (o * u + j) * row, Bytes(x) + (o * dim + firsts[j]) * row, row);
    }
  }
  auto int_tensor = [](const std::vector<int64_t>& v) {
    Tensor t(TP::INT64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    return t;
  };
  ctx.output(0) = std::move(y);
  if (ctx.output_count() > 1) ctx.output(1) = int_tensor(firsts);
  if (ctx.output_count() > 2) ctx.output(2) = int_tensor(inverse);
  if (ctx.output_count() > 3) ctx.output(3) = int_tensor(counts);
}

// ---- Trilu / EyeLike ----

void TriluKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"upper"});
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.Fail("input must have rank >= 2");
  const int64_t k = ctx.has_input(1) ? ReadIntScalar(ctx, ctx.input(1), "k") : 0;
  const bool upper = ctx.GetInt("upper", 1) != 0;
  Tensor out = x.Clone();
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t mats = rows * cols == 0 ? 0 : x.size() / (rows * cols);
  const size_t elem = ir::DtypeSize(x.dtype());
  for (int64_t m = 0; m < mats; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) std::memset(MutableBytes(out) + ((m * rows + i) * cols + j) * elem, 0, elem);
      }
    }
  }
  ctx.output(0) = std::move(out);
}

void EyeLikeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"dtype", "k"});
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.Fail(fmt::format("input must be 2-D, got {}", x.DebugString()));
  const auto dtype = static_cast<int32_t>(ctx.GetInt("dtype", x.dtype()));
  const int64_t k = ctx.GetInt("k", 0);
  Tensor out(dtype, x.shape());
  DispatchAll(ctx, dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.mutable_data<T>();
    for (int64_t i = 0; i < x.dim(0); ++i) {
      if (i + k >= 0 && i + k < x.dim(1)) p[i * x.dim(1) + i + k] = T(1);
    }
  });
  ctx.output(0) = std::move(out);
}

// ---- CumSum / ReverseSequence ----

void CumSumKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"exclusive", "reverse"});
  const Tensor& x = ctx.input(0);
  const int axis = NormalizeAxis(ctx, ReadIntScalar(ctx, ctx.input(1), "axis"), x.rank());
  const bool exclusive = ctx.GetInt("exclusive", 0) != 0;
  const bool reverse = ctx.GetInt("reverse", 0) != 0;
  Tensor out(x.dtype(), x.shape());
  const int64_t outer = Product(x.shape(), 0, axis), dim = x.dim(axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.rank());
  DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        T sum{};
        for (int64_t s = 0; s < dim; ++s) {
          const int64_t j = reverse ? dim - 1 - s : s;
          const int64_t at = (o * dim + j) * inner + i;
          if (exclusive) dst[at] = sum;
          sum = static_cast<T>(sum + src[at]);
          if (!exclusive) dst[at] = sum;
        }
      }
    }
  });
  ctx.output(0) = std::move(out);
}

void ReverseSequenceKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"batch_axis", "time_axis"});
  const Tensor& x = ctx.input(0);
  const auto lens = ReadInts(ctx, ctx.input(1));
  const int64_t batch_axis = ctx.GetInt("batch_axis", 1), time_axis = ctx.GetInt("time_axis", 0);
  if (x.rank() < 2 || std::min(batch_axis, time_axis) < 0 || std::max(batch_axis, time_axis) > 1 ||
      batch_axis == time_axis) {
    ctx.Fail(fmt::format("batch_axis {} and time_axis {} must be 0 and 1 in some order", batch_axis,
                         time_axis));
  }
  const int64_t batch = x.dim(static_cast<int>(batch_axis));
  const int64_t steps = x.dim(static_cast<int>(time_axis));
  if (static_cast<int64_t>(lens.size()) != batch) ctx.Fail("sequence_lens must have batch values");
  Tensor out = x.Clone();
  const auto strides = RowMajorStrides(x.shape());
  const int64_t row = strides[1] * ir::DtypeSize(x.dtype());
  for (int64_t b = 0; b < batch; ++b) {
    if (lens[b] < 0 || lens[b] > steps)
      ctx.Fail(fmt::format("sequence_lens {} is out of range", lens[b]));
    for (int64_t t = 0; t < lens[b]; ++t) {
      auto at = [&](int64_t step) {
        return (batch_axis == 0 ? b * x.dim(1) + step : step * x.dim(1) + b) * row;
      };
      std::memcpy(MutableBytes(out) + at(t), Bytes(x) + at(lens[b] - 1 - t), row);
    }
  }
  ctx.output(0) = std::move(out);
}

}  // namespace

void RegisterIndexingKernels(KernelRegistry& r) {
  r.Register("", "GatherND", 11, kLatest, GatherNDKernel);
  r.Register("", "ScatterND", 11, kLatest, ScatterNDKernel);
  r.Register("", "ScatterElements", 11, kLatest, ScatterElementsKernel);
  r.Register("", "Scatter", 9, 10, ScatterElementsKernel);
  r.Register("", "OneHot", 9, kLatest, OneHotKernel);
  r.Register("", "Compress", 9, kLatest, CompressKernel);
  r.Register("", "NonZero", 9, kLatest, NonZeroKernel);
  r.Register("", "Unique", 11, kLatest, UniqueKernel);
  r.Register("", "Trilu", 14, kLatest, TriluKernel);
  r.Register("", "EyeLike", 9, kLatest, EyeLikeKernel);
  r.Register("", "CumSum", 11, kLatest, CumSumKernel);
  r.Register("", "ReverseSequence", 10, kLatest, ReverseSequenceKernel);
}

}  // namespace porttool::runtime
