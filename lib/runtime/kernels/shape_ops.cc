// Shape and data-movement kernels. They move elements without looking at their values, so most
// work on any dtype through byte-level copies (element sizes 1, 2, 4, 8).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "lib/ir/dtype.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// The outer dims of a strided copy (all but the last), in the order the rows are visited:
// the largest source stride outermost, so consecutive rows read nearby source elements. A
// transpose from NHWC visits each H row's C output rows while that row is in L1, rather than C
// passes over the whole input (BlazeFace's input Transpose: 1.3x ONNX Runtime's time, 2.1x at 2
// threads).
struct RowWalk {
  std::vector<int64_t> dims, src_strides, dst_strides;
  RowWalk(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    const size_t outer = shape.size() - 1;
    std::vector<int64_t> dst(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) dst[i - 1] = dst[i] * shape[i];
    std::vector<size_t> order(outer);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::abs(strides[a]) > std::abs(strides[b]);
    });
    for (size_t d : order) {
      dims.push_back(shape[d]);
      src_strides.push_back(strides[d]);
      dst_strides.push_back(dst[d]);
    }
  }
};

// Rows [begin, end) of the walk (a row: the `inner` elements of the last dim), from the offsets
// of row `begin`, then an odometer over the outer dims.
template <typename E>
void StridedCopyRows(const E* src, int64_t base, const RowWalk& walk, int64_t inner, int64_t step,
                     int64_t begin, int64_t end, E* dst) {
  const size_t outer = walk.dims.size();
  std::vector<int64_t> idx(outer, 0);
  int64_t from = base, to = 0;
  for (size_t d = outer, rest = static_cast<size_t>(begin); d-- > 0;) {
    idx[d] = static_cast<int64_t>(rest % static_cast<size_t>(walk.dims[d]));
    rest /= static_cast<size_t>(walk.dims[d]);
    from += idx[d] * walk.src_strides[d];
    to += idx[d] * walk.dst_strides[d];
  }
  for (int64_t row = begin; row < end; ++row) {
    const E* s = src + from;
    E* out = dst + to;
    if (step == 1) {
      std::memcpy(out, s, inner * sizeof(E));
    } else {
      for (int64_t i = 0; i < inner; ++i) out[i] = s[i * step];
    }
    for (size_t d = outer; d-- > 0;) {  // odometer over the outer dims
      from += walk.src_strides[d];
      to += walk.dst_strides[d];
      if (++idx[d] < walk.dims[d]) break;
      from -= walk.src_strides[d] * walk.dims[d];
      to -= walk.dst_strides[d] * walk.dims[d];
      idx[d] = 0;
    }
  }
}

// The rows go to the thread pool (each writes its own rows of the output).
template <typename E>
void StridedCopyT(const E* src, int64_t base, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides, E* dst) {
  const int64_t total = ir::ElementCount(shape);
  if (total == 0) return;
  if (shape.empty()) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = shape.back(), step = strides.back();
  const RowWalk walk(shape, strides);
  ParallelRows(total / inner, inner, [&](int64_t begin, int64_t end) {
    StridedCopyRows(src, base, walk, inner, step, begin, end, dst);
  });
}

// Copies the elements of `src` addressed by (base, per-dim strides) into a new tensor of
// `shape`. Strides may be 0 (broadcast) or negative (reversed slices).
Tensor StridedCopy(const Tensor& src, int64_t base, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides) {
  Tensor out(src.dtype(), shape);
  const bool copied = DispatchBySize(ir::DtypeSize(src.dtype()), [&](auto tag) {
    using U = decltype(tag);
    StridedCopyT(static_cast<const U*>(src.raw()), base, shape, strides,
                 static_cast<U*>(out.mutable_raw()));
  });
  if (!copied) {
    ThrowInternal("element size {} for {}", ir::DtypeSize(src.dtype()), src.DebugString());
  }
  return out;
}

// ---- Reshape family ----

void ReshapeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"allowzero"});
  bool allow_zero = ctx.GetInt("allowzero", 0) != 0;
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> shape = ReadInts(ctx, ctx.input(1));
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= x.shape().size()) ctx.Fail("shape has 0 at a dim the input does not have");
      shape[i] = x.dim(static_cast<int>(i));
    }
    if (shape[i] == -1) {
      if (infer >= 0) ctx.Fail("shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      ctx.Fail(fmt::format("invalid dim {} in shape", shape[i]));
    } else {
      auto product = util::CheckedMul(known, shape[i]);
      if (!product) {
        ctx.Fail(fmt::format("shape [{}] holds more than 2^63 elements", fmt::join(shape, ",")));
      }
      known = *product;
    }
  }
  if (infer >= 0) shape[infer] = known == 0 ? 0 : x.size() / known;
  if (util::CheckedElementCount(shape) != x.size()) {
    ctx.Fail(fmt::format("cannot reshape {} to [{}]", x.DebugString(), fmt::join(shape, ",")));
  }
  ctx.output(0) = x.Reshaped(shape);
}

void FlattenKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.GetInt("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis > x.rank()) ctx.Fail(fmt::format("axis {} out of range", axis));
  // Both sides as products of their dims: size / outer loses the inner side when outer is 0
  // (a 0 batch flattened [0, 8, 1, 1] to [0, 0]; ONNX gives [0, 8]).
  // Checked: with a 0 on one side the other side's product is bounded by nothing.
  const std::vector<int64_t>& dims = x.shape();
  const std::string what = fmt::format("node '{}' (Flatten) output", ctx.node().name());
  const int64_t outer = util::ElementCountOf(std::span(dims).first(axis), what);
  const int64_t inner = util::ElementCountOf(std::span(dims).subspan(axis), what);
  ctx.output(0) = x.Reshaped({outer, inner});
}

std::vector<int64_t> AxesFromAttrOrInput(KernelContext& ctx, int input_index, int first_opset) {
  if (ctx.opset() >= first_opset) {
    return ctx.has_input(input_index) ? ReadInts(ctx, ctx.input(input_index))
                                      : std::vector<int64_t>{};
  }
  return ctx.GetInts("axes");
}

void SqueezeKernel(KernelContext& ctx) {
  ctx.AllowAttributes(ctx.opset() < 13 ? std::vector<std::string>{"axes"}
                                       : std::vector<std::string>{});
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes = AxesFromAttrOrInput(ctx, 1, 13);
  std::vector<bool> drop(x.rank(), false);
  for (int64_t a : axes) {
    int axis = NormalizeAxis(ctx, a, x.rank());
    if (x.dim(axis) != 1)
      ctx.Fail(fmt::format("cannot squeeze axis {} of size {}", a, x.dim(axis)));
    drop[axis] = true;
  }
  std::vector<int64_t> shape;
  for (int i = 0; i < x.rank(); ++i) {
    bool squeeze = axes.empty() ? x.dim(i) == 1 : drop[i];
    if (!squeeze) shape.push_back(x.dim(i));
  }
  ctx.output(0) = x.Reshaped(shape);
}

void UnsqueezeKernel(KernelContext& ctx) {
  ctx.AllowAttributes(ctx.opset() < 13 ? std::vector<std::string>{"axes"}
                                       : std::vector<std::string>{});
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes = AxesFromAttrOrInput(ctx, 1, 13);
  int out_rank = x.rank() + static_cast<int>(axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) {
    int axis = NormalizeAxis(ctx, a, out_rank);
    if (inserted[axis]) ctx.Fail(fmt::format("axis {} repeated", a));
    inserted[axis] = true;
  }
  std::vector<int64_t> shape;
  for (int i = 0, j = 0; i < out_rank; ++i) shape.push_back(inserted[i] ? 1 : x.dim(j++));
  ctx.output(0) = x.Reshaped(shape);
}

// ---- data movement ----

void TransposeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"perm"});
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm = ctx.GetInts("perm");
  if (perm.empty()) {
    for (int i = x.rank(); i-- > 0;) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != x.rank()) ctx.Fail("perm length differs from the rank");
  auto in_strides = Strides(x.shape());
  std::vector<int64_t> shape, strides;
  std::vector<bool> seen(x.rank(), false);
  for (int64_t p : perm) {
    int axis = NormalizeAxis(ctx, p, x.rank());
    if (seen[axis]) ctx.Fail("perm repeats an axis");
    seen[axis] = true;
    shape.push_back(x.dim(axis));
    strides.push_back(in_strides[axis]);
  }
  ctx.output(0) = StridedCopy(x, 0, shape, strides);
}

// One Concat input: `row` bytes per outer index, at byte `col` of each output row.
struct ConcatPart {
  const uint8_t* src;
  size_t col, row;
};

// Copies the parts into `dst` (outer rows of out_row bytes), split over the threads by blocks
// of output bytes: det's Concat of four 2.4 MB maps ran on one thread and took longer at 2
// threads than at 1, its inputs written by both cores.
void CopyConcatParts(const std::vector<ConcatPart>& parts, int64_t outer, size_t out_row,
                     uint8_t* dst) {
  constexpr int64_t kBlockBytes = 64 * 1024;
  const int64_t total = outer * static_cast<int64_t>(out_row);
  const int64_t blocks = (total + kBlockBytes - 1) / kBlockBytes;
  ParallelRows(blocks, kBlockBytes / 4, [&](int64_t begin, int64_t end) {
    int64_t at = begin * kBlockBytes;
    const int64_t stop = std::min(total, end * kBlockBytes);
    while (at < stop) {
      const int64_t o = at / static_cast<int64_t>(out_row);
      const size_t within = at % out_row;
      const ConcatPart* part = &parts.front();
      for (const ConcatPart& p : parts) {
        if (p.col <= within && within < p.col + p.row) part = &p;
      }
      const size_t offset = within - part->col;
      const int64_t n = std::min<int64_t>(stop - at, part->row - offset);
      std::memcpy(dst + at, part->src + o * part->row + offset, n);
      at += n;
    }
  });
}

void ConcatKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& first = ctx.input(0);
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), first.rank());
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  for (int i = 0; i < ctx.input_count(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.rank() != first.rank() || t.dtype() != first.dtype()) {
      ctx.Fail(fmt::format("input {} is {}, incompatible with {}", i, t.DebugString(),
                           first.DebugString()));
    }
    for (int d = 0; d < t.rank(); ++d) {
      if (d != axis && t.dim(d) != first.dim(d)) {
        ctx.Fail(fmt::format("input {} is {}; dims other than axis {} must match {}", i,
                             t.DebugString(), axis, first.DebugString()));
      }
    }
    shape[axis] += t.dim(axis);
  }
  Tensor out = Tensor::Uninitialized(first.dtype(), shape);  // every row is copied in
  size_t elem = ir::DtypeSize(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (int d = axis + 1; d < first.rank(); ++d) inner *= shape[d];
  std::vector<ConcatPart> parts;
  size_t col = 0;
  for (int i = 0; i < ctx.input_count(); ++i) {
    const Tensor& t = ctx.input(i);
    parts.push_back({static_cast<const uint8_t*>(t.raw()), col, t.dim(axis) * inner * elem});
    col += parts.back().row;
  }
  CopyConcatParts(parts, outer, col, static_cast<uint8_t*>(out.mutable_raw()));
  ctx.output(0) = std::move(out);
}

void SplitKernel(KernelContext& ctx) {
  ctx.AllowAttributes(ctx.opset() < 13 ? std::vector<std::string>{"axis", "split"}
                                       : std::vector<std::string>{"axis"});
  const Tensor& x = ctx.input(0);
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
  std::vector<int64_t> split = ctx.opset() < 13   ? ctx.GetInts("split")
                               : ctx.has_input(1) ? ReadInts(ctx, ctx.input(1))
                                                  : std::vector<int64_t>{};
  int n = ctx.output_count();
  if (split.empty()) {
    if (x.dim(axis) % n != 0) {
      ctx.Fail(fmt::format("dim {} of size {} cannot be split evenly into {} outputs", axis,
                           x.dim(axis), n));
    }
    split.assign(n, x.dim(axis) / n);
  }
  if (static_cast<int>(split.size()) != n ||
      std::accumulate(split.begin(), split.end(), int64_t{0}) != x.dim(axis)) {
    ctx.Fail(fmt::format("split sizes [{}] do not cover dim {} of size {} with {} outputs",
                         fmt::join(split, ","), axis, x.dim(axis), n));
  }
  auto strides = Strides(x.shape());
  int64_t start = 0;
  for (int i = 0; i < n; ++i) {
    auto shape = x.shape();
    shape[axis] = split[i];
    if (ctx.wants_output(i)) ctx.output(i) = StridedCopy(x, start * strides[axis], shape, strides);
    start += split[i];
  }
}

void SliceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    ctx.AllowAttributes({"starts", "ends", "axes"});
    starts = ctx.GetInts("starts");
    ends = ctx.GetInts("ends");
    axes = ctx.GetInts("axes");
  } else {
    ctx.AllowAttributes({});
    starts = ReadInts(ctx, ctx.input(1));
    ends = ReadInts(ctx, ctx.input(2));
    if (ctx.has_input(3)) axes = ReadInts(ctx, ctx.input(3));
    if (ctx.has_input(4)) steps = ReadInts(ctx, ctx.input(4));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    ctx.Fail("starts, ends, axes and steps must have the same length");
  }
  auto strides = Strides(x.shape());
  std::vector<int64_t> shape = x.shape(), out_strides = strides;
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int axis = NormalizeAxis(ctx, axes[i], x.rank());
    int64_t dim = x.dim(axis), step = steps[i];
    if (step == 0) ctx.Fail("slice step cannot be 0");
    auto clamp = [&](int64_t v) {
      if (v < 0) v += dim;
      return step > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
    };
    int64_t s = clamp(starts[i]), e = clamp(ends[i]);
    int64_t count = step > 0 ? (e - s + step - 1) / step : (s - e - step - 1) / -step;
    shape[axis] = std::max<int64_t>(count, 0);
    out_strides[axis] = strides[axis] * step;
    if (shape[axis] > 0) base += s * strides[axis];
  }
  ctx.output(0) = StridedCopy(x, base, shape, out_strides);
}

void ExpandKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  auto shape = BroadcastShapes(ctx, {x.shape(), ReadInts(ctx, ctx.input(1))});
  auto in_strides = Strides(x.shape());
  std::vector<int64_t> strides(shape.size(), 0);
  size_t shift = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i) {
    strides[shift + i] = x.shape()[i] == 1 ? 0 : in_strides[i];
  }
  ctx.output(0) = StridedCopy(x, 0, shape, strides);
}

// Tile is a broadcast copy of x viewed as [1, d0, 1, d1, ...] to [r0, d0, r1, d1, ...].
void TileKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  auto repeats = ReadInts(ctx, ctx.input(1));
  if (static_cast<int>(repeats.size()) != x.rank()) ctx.Fail("repeats length differs from rank");
  auto in_strides = Strides(x.shape());
  std::vector<int64_t> shape, strides, out_shape;
  for (int i = 0; i < x.rank(); ++i) {
    auto dim = util::CheckedMul(repeats[i], x.dim(i));
    if (!dim) ctx.Fail(fmt::format("repeat {} on axis {} is negative or overflows", repeats[i], i));
    shape.insert(shape.end(), {repeats[i], x.dim(i)});
    strides.insert(strides.end(), {0, in_strides[i]});
    out_shape.push_back(*dim);
  }
  ctx.output(0) = StridedCopy(x, 0, shape, strides).Reshaped(out_shape);
}

void GatherBytes(const Tensor& x, const std::vector<int64_t>& idx, int axis, Tensor& out) {
  int64_t outer = 1, inner = static_cast<int64_t>(ir::DtypeSize(x.dtype()));
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t dim = x.dim(axis), n = static_cast<int64_t>(idx.size());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(dst + (o * n + j) * inner, src + (o * dim + idx[j]) * inner, inner);
    }
  }
}

void GatherKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
  auto idx = ReadInts(ctx, indices);
  for (auto& i : idx) {
    if (i < -x.dim(axis) || i >= x.dim(axis)) {
      ctx.Fail(
          fmt::format("index {} is out of range for axis {} of size {}", i, axis, x.dim(axis)));
    }
    if (i < 0) i += x.dim(axis);
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  Tensor out(x.dtype(), shape);
  GatherBytes(x, idx, axis, out);
  ctx.output(0) = std::move(out);
}

void GatherElementsKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 0), x.rank());
  if (indices.rank() != x.rank()) ctx.Fail("indices must have the rank of data");
  for (int d = 0; d < x.rank(); ++d) {
    // Off the gather axis an index coordinate addresses data directly: it must fit.
    if (d != axis && indices.dim(d) > x.dim(d)) {
      ctx.Fail(fmt::format("indices {} exceed data {} on axis {}", indices.DebugString(),
                           x.DebugString(), d));
    }
  }
  auto idx = ReadInts(ctx, indices);
  Tensor out(x.dtype(), indices.shape());
  auto in_strides = Strides(x.shape());
  auto idx_strides = Strides(indices.shape());
  size_t elem = ir::DtypeSize(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t offset = 0, rem = i;
    for (int d = 0; d < x.rank(); ++d) {
      int64_t c = rem / idx_strides[d];
      rem %= idx_strides[d];
      if (d == axis) {
        c = idx[i];
        if (c < -x.dim(d) || c >= x.dim(d)) ctx.Fail(fmt::format("index {} out of range", c));
        if (c < 0) c += x.dim(d);
      }
      offset += c * in_strides[d];
    }
    std::memcpy(dst + i * elem, src + offset * elem, elem);
  }
  ctx.output(0) = std::move(out);
}

// ---- Pad ----

// One copy or fill per run instead of one index walk per element (M-LSD's three NHWC Pads took
// 14.5 ms this way against ORT's fraction of one). The axes after the last padded one are one
// contiguous block in input and output alike; along the last padded axis, consecutive output
// positions that read consecutive input positions (or the constant) merge into one run.
struct PadRun {
  int64_t length = 0;  // positions along the last padded axis
  int64_t source = 0;  // first input position, or -1 for the constant
};

std::vector<PadRun> RunsOf(const std::vector<int64_t>& map) {
  std::vector<PadRun> runs;
  for (int64_t i : map) {
    if (!runs.empty()) {
      PadRun& last = runs.back();
      const bool both_fill = last.source < 0 && i < 0;
      const bool next_source = last.source >= 0 && i == last.source + last.length;
      if (both_fill || next_source) {
        ++last.length;
        continue;
      }
    }
    runs.push_back({1, i < 0 ? -1 : i});
  }
  return runs;
}

bool IsIdentityMap(const std::vector<int64_t>& map, int64_t dim) {
  if (static_cast<int64_t>(map.size()) != dim) return false;
  for (int64_t i = 0; i < dim; ++i) {
    if (map[i] != i) return false;
  }
  return true;
}

template <typename T>
void PadByRuns(const T* src, const std::vector<int64_t>& in_shape,
               const std::vector<std::vector<int64_t>>& maps, T fill, T* dst) {
  const int rank = static_cast<int>(in_shape.size());
  int axis = rank - 1;  // the last axis whose output differs from the input
  while (axis >= 0 && IsIdentityMap(maps[axis], in_shape[axis])) --axis;
  int64_t block = 1;
  for (int d = axis + 1; d < rank; ++d) block *= in_shape[d];
  if (axis < 0) {
    std::copy(src, src + block, dst);
    return;
  }
  const std::vector<PadRun> runs = RunsOf(maps[axis]);
  const int64_t slab = static_cast<int64_t>(maps[axis].size()) * block;
  const auto in_strides = Strides(in_shape);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= static_cast<int64_t>(maps[d].size());
  std::vector<int64_t> idx(axis, 0);
  for (int64_t o = 0; o < outer; ++o, dst += slab) {
    int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < axis && inside; ++d) {
      const int64_t i = maps[d][idx[d]];
      inside = i >= 0;
      offset += i * in_strides[d];
    }
    if (!inside) {
      std::fill(dst, dst + slab, fill);
    } else {
      T* at = dst;
      for (const PadRun& run : runs) {
        const int64_t n = run.length * block;
        if (run.source < 0) {
          std::fill(at, at + n, fill);
        } else {
          const T* from = src + offset + run.source * in_strides[axis];
          std::copy(from, from + n, at);
        }
        at += n;
      }
    }
    for (int d = axis; d-- > 0;) {
      if (++idx[d] < static_cast<int64_t>(maps[d].size())) break;
      idx[d] = 0;
    }
  }
}

void PadKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::string mode = ctx.GetString("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (ctx.opset() < 11) {
    ctx.AllowAttributes({"mode", "pads", "value", "paddings"});
    pads = ctx.GetInts(ctx.HasAttribute("paddings") ? "paddings" : "pads");
    value = ctx.GetFloat("value", 0.0f);
  } else {
    ctx.AllowAttributes({"mode"});
    pads = ReadInts(ctx, ctx.input(1));
    if (ctx.has_input(2) && ctx.input(2).size() > 0) value = ReadScalar(ctx, ctx.input(2));
    if (ctx.has_input(3)) {
      auto axes = ReadInts(ctx, ctx.input(3));
      std::vector<int64_t> full(2 * x.rank(), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        int a = NormalizeAxis(ctx, axes[i], x.rank());
        full[a] = pads.at(i);
        full[a + x.rank()] = pads.at(i + axes.size());
      }
      pads = full;
    }
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    ctx.Fail("mode '" + mode + "' is not supported (constant, reflect, edge)");
  }
  const int rank = x.rank();
  if (static_cast<int>(pads.size()) != 2 * rank) ctx.Fail("pads must have 2 * rank values");
  // Per axis: output coordinate -> input coordinate, or -1 for the constant value.
  std::vector<std::vector<int64_t>> maps(rank);
  std::vector<int64_t> shape(rank);
  for (int d = 0; d < rank; ++d) {
    if (__builtin_add_overflow(x.dim(d), pads[d], &shape[d]) ||
        __builtin_add_overflow(shape[d], pads[d + rank], &shape[d])) {
      ctx.Fail(fmt::format("pads [{}] overflow the output dims", fmt::join(pads, ",")));
    }
    if (shape[d] < 0) ctx.Fail("negative output dim after padding");
  }
  // Allocating first applies the memory limits and bounds every axis map below by the output.
  Tensor out(x.dtype(), shape);
  for (int d = 0; d < rank && out.size() > 0; ++d) {
    const int64_t dim = x.dim(d), before = pads[d];
    for (int64_t o = 0; o < shape[d]; ++o) {
      int64_t i = o - before;
      if (i < 0 || i >= dim) {
        if (mode == "constant" || dim == 0) {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else {
          int64_t period = std::max<int64_t>(2 * (dim - 1), 1);
          i = ((i % period) + period) % period;
          if (i >= dim) i = period - i;
        }
      }
      maps[d].push_back(i);
    }
  }
  DispatchAll(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    PadByRuns(x.data<T>(), x.shape(), maps, SaturateCast<T>(value), out.mutable_data<T>());
  });
  ctx.output(0) = std::move(out);
}

// ---- shape-producing and constants ----

// start + i * delta; integers wrap like the two's-complement hardware instead of overflowing
// into undefined behaviour (the count is bounded, the values are the model's business).
template <typename T>
T RangeValue(T start, T delta, int64_t i) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(
        static_cast<U>(start) + static_cast<U>(static_cast<U>(i) * static_cast<U>(delta))));
  } else {
    return static_cast<T>(start + static_cast<T>(i) * delta);
  }
}

Tensor Int64Vector(const std::vector<int64_t>& values) {
  Tensor t(TP::INT64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return t;
}

void ShapeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"start", "end"});
  const auto& shape = ctx.input(0).shape();
  int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clamp(ctx.GetInt("start", 0)), end = clamp(ctx.GetInt("end", rank));
  ctx.output(0) = Int64Vector(
      std::vector<int64_t>(shape.begin() + start, shape.begin() + std::max(start, end)));
}

void SizeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  Tensor t(TP::INT64, {});
  t.mutable_data<int64_t>()[0] = ctx.input(0).size();
  ctx.output(0) = std::move(t);
}

Tensor ProtoValue(const KernelContext& ctx, const onnx::TensorProto& proto) {
  return ctx.model() ? TensorFromProto(*ctx.model(), proto) : TensorFromProto(proto);
}

Tensor ConstantValue(const KernelContext& ctx) {
  if (ctx.node().attribute_size() != 1) ctx.Fail("needs exactly one value attribute");
  const auto& a = ctx.node().attribute(0);
  if (a.name() == "value") return ProtoValue(ctx, a.t());
  if (a.name() == "value_float") {
    Tensor t(TP::FLOAT, {});
    t.mutable_data<float>()[0] = a.f();
    return t;
  }
  if (a.name() == "value_floats") {
    Tensor t(TP::FLOAT, {a.floats_size()});
    std::copy(a.floats().begin(), a.floats().end(), t.mutable_data<float>());
    return t;
  }
  if (a.name() == "value_int") {
    Tensor t(TP::INT64, {});
    t.mutable_data<int64_t>()[0] = a.i();
    return t;
  }
  return Int64Vector({a.ints().begin(), a.ints().end()});
}

// Built once at plan time as a read-only tensor; every run hands out a view of it. Converting the
// proto each run copied every weight of models that store them in Constant nodes (paddle2onnx
// exports: PP-OCR cls spent 12% of a run there).
std::shared_ptr<const void> PrepareConstant(const KernelContext& ctx) {
  ctx.AllowAttributes({"value", "value_float", "value_floats", "value_int", "value_ints"});
  Tensor t = ConstantValue(ctx);
  auto storage = std::make_shared<Tensor>(std::move(t));
  return std::make_shared<Tensor>(
      Tensor::View(storage->dtype(), storage->shape(), storage->raw(), storage));
}

void ConstantKernel(KernelContext& ctx) {
  if (const Tensor* value = ctx.prepared<Tensor>()) {
    ctx.output(0) = *value;
    return;
  }
  ctx.AllowAttributes({"value", "value_float", "value_floats", "value_int", "value_ints"});
  ctx.output(0) = ConstantValue(ctx);
}

void ConstantOfShapeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"value"});
  auto shape = ReadInts(ctx, ctx.input(0));
  Tensor value(TP::FLOAT, {1});
  if (const auto* a = ctx.Attribute("value")) value = ProtoValue(ctx, a->t());
  if (value.size() != 1) ctx.Fail("'value' must hold one element");
  Tensor out(value.dtype(), shape);
  size_t elem = ir::DtypeSize(value.dtype());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t i = 0; i < out.size(); ++i) std::memcpy(dst + i * elem, value.raw(), elem);
  ctx.output(0) = std::move(out);
}

void RangeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& start = ctx.input(0);
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = ctx.input(i);
    if (t.size() != 1 || t.dtype() != start.dtype()) {
      ctx.Fail(fmt::format("start, limit and delta must be single values of one type, got {}",
                           t.DebugString()));
    }
  }
  DispatchNumeric(ctx, start.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T s = start.data<T>()[0], limit = ctx.input(1).data<T>()[0], delta = ctx.input(2).data<T>()[0];
    if (delta == T(0)) ctx.Fail("delta cannot be 0");
    double n = std::ceil((static_cast<double>(limit) - static_cast<double>(s)) /
                         static_cast<double>(delta));
    // NaN or infinite bounds, or a count past int64, would make the cast below undefined.
    if (!(n < 0x1p62)) ctx.Fail(fmt::format("the range holds {} elements", n));
    Tensor out(start.dtype(), {std::max<int64_t>(static_cast<int64_t>(n), 0)});
    T* p = out.mutable_data<T>();
    for (int64_t i = 0; i < out.size(); ++i) p[i] = RangeValue(s, delta, i);
    ctx.output(0) = std::move(out);
  });
}

void IdentityKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  ctx.output(0) = ctx.input(0);
}

// Inference only: Dropout is the identity and its mask is all true.
void DropoutKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"ratio", "seed", "is_test"});
  if (ctx.has_input(2) && ReadScalar(ctx, ctx.input(2)) != 0) {
    ctx.Fail(
        "training_mode=true (random dropout) is not supported; the executor runs "
        "inference only");
  }
  if (ctx.opset() < 7 && ctx.HasAttribute("is_test") && ctx.GetInt("is_test", 0) == 0) {
    ctx.Fail("is_test=0 (training) is not supported; the executor runs inference only");
  }
  const Tensor& x = ctx.input(0);
  ctx.output(0) = x;
  if (ctx.wants_output(1)) {
    Tensor mask(TP::BOOL, x.shape());
    std::fill(mask.mutable_data<bool>(), mask.mutable_data<bool>() + mask.size(), true);
    ctx.output(1) = std::move(mask);
  }
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  r.Register("", "Reshape", 5, kLatest, ReshapeKernel);
  r.Register("", "Flatten", 1, kLatest, FlattenKernel);
  r.Register("", "Squeeze", 1, kLatest, SqueezeKernel);
  r.Register("", "Unsqueeze", 1, kLatest, UnsqueezeKernel);
  r.Register("", "Transpose", 1, kLatest, TransposeKernel);
  r.Register("", "Concat", 4, kLatest, ConcatKernel);
  r.Register("", "Split", 2, 17, SplitKernel);
  r.Register("", "Slice", 1, kLatest, SliceKernel);
  r.Register("", "Expand", 8, kLatest, ExpandKernel);
  r.Register("", "Tile", 6, kLatest, TileKernel);
  r.Register("", "Gather", 1, kLatest, GatherKernel);
  r.Register("", "GatherElements", 11, kLatest, GatherElementsKernel);
  r.Register("", "Pad", 2, kLatest, PadKernel);
  r.Register("", "Shape", 1, kLatest, ShapeKernel);
  r.Register("", "Size", 1, kLatest, SizeKernel);
  r.Register("", "Constant", 1, kLatest, ConstantKernel, PrepareConstant);
  r.Register("", "ConstantOfShape", 9, kLatest, ConstantOfShapeKernel);
  r.Register("", "Range", 11, kLatest, RangeKernel);
  r.Register("", "Identity", 1, kLatest, IdentityKernel);
  r.Register("", "Dropout", 1, kLatest, DropoutKernel);
}

}  // namespace porttool::runtime
