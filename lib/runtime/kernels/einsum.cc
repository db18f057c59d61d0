// Einsum (opset 12+): explicit and implicit output, "..." broadcasting, repeated labels
// (diagonals, traces) and sums over labels, for every numeric type.
//
// Two evaluation paths. The kernel runs the fast one: size-1 broadcast axes are dropped, each
// operand is first reduced on its own (diagonals, labels nothing else needs) by the summation
// loop, which is linear in the operand's size, then operands are contracted pairwise left to
// right, each pair as one batched GEMM [batch, m, k] x [batch, k, n] through gemm.h, the door to
// BLAS that MatMul and Gemm use, with a permutation copy only when an operand's or the output's
// label order is neither of the layouts GEMM takes directly ('bhqd,bhkd->bhqk' needs no copy). The
// general path, one loop over every output and summed label, is the plain definition; the tests
// hold the two against each other.
#include "lib/runtime/kernels/einsum.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/gemm.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace kernels {
namespace {

constexpr int kLetters = 52;  // label ids >= kLetters are the dims "..." stands for

int LetterId(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

std::string TermText(const std::vector<int>& term) {
  std::string s;
  for (int l : term) {
    if (l == kEinsumEllipsis) {
      s += "...";
    } else {
      s += static_cast<char>(l < 26 ? 'A' + l : 'a' + (l - 26));
    }
  }
  return s;
}

std::string LabelText(int label) {
  return label < kLetters ? TermText({label}) : fmt::format("'...' dim {}", label - kLetters);
}

[[noreturn]] void FailEquation(const KernelContext& ctx, const std::string& equation,
                               const std::string& why) {
  ctx.Fail(fmt::format("attribute 'equation' value '{}' is invalid: {}", equation, why));
}

std::vector<int> ParseTerm(const KernelContext& ctx, const std::string& equation,
                           const std::string& term) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0) FailEquation(ctx, equation, "a '.' outside '...'");
      if (ellipsis) FailEquation(ctx, equation, fmt::format("term '{}' has two '...'", term));
      ellipsis = true;
      labels.push_back(kEinsumEllipsis);
      i += 2;
      continue;
    }
    const int id = LetterId(c);
    if (id < 0) {
      FailEquation(ctx, equation,
                   fmt::format("character '{}' is not a letter, ',', '->' or '...'", c));
    }
    labels.push_back(id);
  }
  return labels;
}

// ---- shapes: labels bound to sizes ----

struct Problem {
  std::vector<int64_t> label_dims;             // by label id; -1 when unused
  std::vector<std::vector<int>> input_labels;  // one label per input axis
  std::vector<int> output_labels;
  std::vector<int64_t> output_shape;
};

Problem Resolve(const KernelContext& ctx, const EinsumEquation& eq,
                const std::vector<const Tensor*>& inputs) {
  const size_t count = inputs.size();
  std::vector<int> ellipsis_dims(count, 0);
  int ellipsis_rank = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto& term = eq.inputs[i];
    const bool has_ellipsis = std::find(term.begin(), term.end(), kEinsumEllipsis) != term.end();
    const int letters = static_cast<int>(term.size()) - (has_ellipsis ? 1 : 0);
    const int rank = inputs[i]->rank();
    if (has_ellipsis ? rank < letters : rank != letters) {
      ctx.Fail(fmt::format("input {} {} does not match term '{}' of equation '{}' ({} dims named)",
                           i, inputs[i]->DebugString(), TermText(term), eq.text, letters));
    }
    ellipsis_dims[i] = rank - letters;
    ellipsis_rank = std::max(ellipsis_rank, ellipsis_dims[i]);
  }
  Problem p;
  p.label_dims.assign(kLetters + ellipsis_rank, -1);
  for (size_t i = 0; i < count; ++i) {
    std::vector<int>& labels = p.input_labels.emplace_back();
    for (int l : eq.inputs[i]) {
      if (l != kEinsumEllipsis) {
        labels.push_back(l);
        continue;
      }
      // "..." dims align to the right across inputs, as numpy broadcasting does.
      for (int j = 0; j < ellipsis_dims[i]; ++j) {
        labels.push_back(kLetters + ellipsis_rank - ellipsis_dims[i] + j);
      }
    }
    std::vector<int64_t> own(p.label_dims.size(), -1);  // a diagonal needs equal sizes
    for (size_t a = 0; a < labels.size(); ++a) {
      const int l = labels[a];
      const int64_t d = inputs[i]->dim(static_cast<int>(a));
      if (own[l] >= 0 && own[l] != d) {
        ctx.Fail(fmt::format("input {} {}: label {} repeats over dims of sizes {} and {}", i,
                             inputs[i]->DebugString(), LabelText(l), own[l], d));
      }
      own[l] = d;
      int64_t& bound = p.label_dims[l];
      if (bound < 0 || bound == 1) {
        bound = d;  // a size-1 dim broadcasts to any size, 0 included
      } else if (d != bound && d != 1) {
        ctx.Fail(fmt::format("label {} is {} in input {} {} but {} elsewhere", LabelText(l), d, i,
                             inputs[i]->DebugString(), bound));
      }
    }
  }
  for (int l : eq.output) {
    if (l != kEinsumEllipsis) {
      p.output_labels.push_back(l);
      continue;
    }
    for (int j = 0; j < ellipsis_rank; ++j) p.output_labels.push_back(kLetters + j);
  }
  if (eq.explicit_output && ellipsis_rank > 0 &&
      std::find(eq.output.begin(), eq.output.end(), kEinsumEllipsis) == eq.output.end()) {
    // numpy's rule: dims "..." stands for are broadcast, never summed away silently.
    ctx.Fail(fmt::format(
        "equation '{}': '...' stands for {} dims in the inputs but the output has no '...'",
        eq.text, ellipsis_rank));
  }
  for (int l : p.output_labels) p.output_shape.push_back(p.label_dims[l]);
  return p;
}

// ---- arithmetic ----

// Sums accumulate in double for floating types and in wrapping 64-bit arithmetic for integers
// (well defined on overflow, and the low bits are the answer a narrower type wraps to).
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
Acc<T> ToAcc(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <typename T>
T FromAcc(Acc<T> v) {
  return static_cast<T>(v);
}

// One operand: a strided view on an input or an owned intermediate.
template <typename T>
struct Operand {
  const T* data = nullptr;
  std::vector<int> labels;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  Tensor owned;  // keeps an intermediate alive
};

template <typename T>
Operand<T> Contiguous(Tensor t, std::vector<int> labels, const std::vector<int64_t>& label_dims) {
  Operand<T> op;
  op.data = t.template data<T>();
  op.labels = std::move(labels);
  for (int l : op.labels) op.dims.push_back(label_dims[l]);
  op.strides = RowMajorStrides(op.dims);
  op.owned = std::move(t);
  return op;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// out[o] = sum over every label not in `out_labels` of the product of the operands: the
// definition, as one loop. `out` is contiguous in `out_labels` order.
template <typename T>
void ContractGeneral(const std::vector<Operand<T>>& ops, const std::vector<int>& out_labels,
                     const std::vector<int64_t>& label_dims, T* out) {
  const size_t count = ops.size();
  std::vector<char> in_out(label_dims.size(), 0);
  for (int l : out_labels) in_out[l] = 1;
  std::vector<int> sum_labels;
  for (const auto& op : ops) {
    for (int l : op.labels) {
      if (!in_out[l] && std::find(sum_labels.begin(), sum_labels.end(), l) == sum_labels.end()) {
        sum_labels.push_back(l);
      }
    }
  }
  // Per operand, the step of each label: a repeated label (diagonal) adds its axes' strides; a
  // size-1 axis broadcast against a larger size steps by 0.
  auto steps_for = [&](const std::vector<int>& labels) {
    std::vector<std::vector<int64_t>> steps(count, std::vector<int64_t>(labels.size(), 0));
    for (size_t k = 0; k < count; ++k) {
      for (size_t a = 0; a < ops[k].labels.size(); ++a) {
        if (ops[k].dims[a] == 1) continue;
        for (size_t j = 0; j < labels.size(); ++j) {
          if (labels[j] == ops[k].labels[a]) steps[k][j] += ops[k].strides[a];
        }
      }
    }
    return steps;
  };
  const auto out_steps = steps_for(out_labels);
  const auto sum_steps = steps_for(sum_labels);
  std::vector<int64_t> out_dims, sum_dims;
  for (int l : out_labels) out_dims.push_back(label_dims[l]);
  for (int l : sum_labels) sum_dims.push_back(label_dims[l]);
  const int64_t total_out = Product(out_dims), total_sum = Product(sum_dims);
  const size_t no = out_dims.size(), ns = sum_dims.size();
  ParallelElements(total_out, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(no, 0), base(count, 0), sidx(ns, 0), off(count, 0);
    for (size_t i = no, rest = static_cast<size_t>(begin); i-- > 0;) {
      idx[i] = static_cast<int64_t>(rest) % out_dims[i];
      rest /= static_cast<size_t>(out_dims[i]);
      for (size_t k = 0; k < count; ++k) base[k] += idx[i] * out_steps[k][i];
    }
    for (int64_t e = begin; e < end; ++e) {
      Acc<T> acc = 0;
      off = base;
      std::fill(sidx.begin(), sidx.end(), 0);
      for (int64_t s = 0; s < total_sum; ++s) {
        Acc<T> p = ToAcc(ops[0].data[off[0]]);
        for (size_t k = 1; k < count; ++k) p *= ToAcc(ops[k].data[off[k]]);
        acc += p;
        for (size_t j = ns; j-- > 0;) {
          for (size_t k = 0; k < count; ++k) off[k] += sum_steps[k][j];
          if (++sidx[j] < sum_dims[j]) break;
          for (size_t k = 0; k < count; ++k) off[k] -= sum_steps[k][j] * sum_dims[j];
          sidx[j] = 0;
        }
      }
      out[e] = FromAcc<T>(acc);
      for (size_t i = no; i-- > 0;) {
        for (size_t k = 0; k < count; ++k) base[k] += out_steps[k][i];
        if (++idx[i] < out_dims[i]) break;
        for (size_t k = 0; k < count; ++k) base[k] -= out_steps[k][i] * out_dims[i];
        idx[i] = 0;
      }
    }
  });
}

// ---- fast path ----

// `op` copied into row-major order of `labels` (a permutation of its labels), into `dst`.
template <typename T>
void PermuteInto(const Operand<T>& op, const std::vector<int>& labels, T* dst) {
  std::vector<int64_t> dims, src_strides;
  for (int l : labels) {
    const size_t a = std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin();
    dims.push_back(op.dims[a]);
    src_strides.push_back(op.strides[a]);
  }
  if (dims.empty()) {
    dst[0] = op.data[0];
    return;
  }
  const int64_t inner = dims.back(), inner_stride = src_strides.back();
  const int64_t rows = Product(dims) / inner;
  const size_t outer = dims.size() - 1;
  ParallelElements(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t src = 0;
      for (size_t i = outer, rest = static_cast<size_t>(r); i-- > 0;) {
        src += static_cast<int64_t>(rest % static_cast<size_t>(dims[i])) * src_strides[i];
        rest /= static_cast<size_t>(dims[i]);
      }
      T* d = dst + r * inner;
      const T* s = op.data + src;
      if (inner_stride == 1) {
        std::copy(s, s + inner, d);
      } else {
        for (int64_t i = 0; i < inner; ++i) d[i] = s[i * inner_stride];
      }
    }
  });
}

template <typename T>
bool IsRowMajor(const Operand<T>& op) {
  return op.strides == RowMajorStrides(op.dims);
}

template <typename T>
Operand<T> Permuted(const Operand<T>& op, const std::vector<int>& labels,
                    const std::vector<int64_t>& label_dims) {
  std::vector<int64_t> dims;
  for (int l : labels) dims.push_back(label_dims[l]);
  Tensor t(kDtypeOf<T>, dims);
  PermuteInto(op, labels, t.template mutable_data<T>());
  return Contiguous<T>(std::move(t), labels, label_dims);
}

bool HasRepeats(const std::vector<int>& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i] == labels[j]) return true;
    }
  }
  return false;
}

// Reduces `op` on its own to the labels in `keep` (in its own order, repeats removed): takes
// diagonals and sums labels no other operand and not the output needs. Linear in op's size.
template <typename T>
Operand<T> ReduceAlone(const Operand<T>& op, const std::vector<char>& keep,
                       const std::vector<int64_t>& label_dims) {
  std::vector<int> labels;
  for (int l : op.labels) {
    if (keep[l] && std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  }
  if (labels.size() == op.labels.size()) return op;  // nothing to reduce
  std::vector<int64_t> dims;
  for (int l : labels) dims.push_back(label_dims[l]);
  Tensor t(kDtypeOf<T>, dims);
  ContractGeneral<T>({op}, labels, label_dims, t.template mutable_data<T>());
  return Contiguous<T>(std::move(t), std::move(labels), label_dims);
}

// Row-major C = op(A) op(B) for one batch; BLAS for float and double.
template <typename T>
void GemmT(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
           int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    Gemm(ta, tb, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc);
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        Acc<T> acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += ToAcc(ta ? a[p * lda + i] : a[i * lda + p]) *
                 ToAcc(tb ? b[j * ldb + p] : b[p * ldb + j]);
        }
        c[i * ldc + j] = FromAcc<T>(acc);
      }
    }
  }
}

// `batches` independent GEMMs, split across threads by batch and, when there are fewer batches
// than threads, by blocks of C's rows (as the MatMul kernel does).
template <typename T>
void BatchedGemm(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, const T* a,
                 int64_t lda, int64_t a_step, const T* b, int64_t ldb, int64_t b_step, T* c,
                 int64_t c_step) {
  const int64_t row_block = batches >= kWorkPieces ? m : PieceSize(m, 16);
  const int64_t blocks = (m + row_block - 1) / row_block;
  ParallelFor(batches * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t g = item / blocks, r0 = (item % blocks) * row_block;
      const int64_t r = std::min(row_block, m - r0);
      const T* pa = a + g * a_step + (ta ? r0 : r0 * lda);
      GemmT<T>(ta, tb, r, n, k, pa, lda, b + g * b_step, ldb, c + g * c_step + r0 * n, n);
    }
  });
}

std::vector<int> Concat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> all;
  for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Contracts two operands into `out_labels` order (unique labels, each in a or b, every size > 1),
// written to `out` when given, else to a new tensor.
template <typename T>
Operand<T> ContractPair(Operand<T> a, Operand<T> b, const std::vector<int>& out_labels,
                        const std::vector<int64_t>& label_dims, T* out) {
  std::vector<char> keep(label_dims.size(), 0);
  for (int l : out_labels) keep[l] = 1;
  for (int l : b.labels) keep[l] = 1;
  a = ReduceAlone(a, keep, label_dims);
  std::fill(keep.begin(), keep.end(), 0);
  for (int l : out_labels) keep[l] = 1;
  for (int l : a.labels) keep[l] = 1;
  b = ReduceAlone(b, keep, label_dims);

  std::vector<int> batch, m_labels, n_labels, k_labels;
  for (int l : out_labels) {
    const bool in_a = Contains(a.labels, l), in_b = Contains(b.labels, l);
    (in_a && in_b ? batch : in_a ? m_labels : n_labels).push_back(l);
  }
  for (int l : a.labels) {
    if (Contains(b.labels, l) && !Contains(out_labels, l)) k_labels.push_back(l);
  }
  auto size_of = [&](const std::vector<int>& labels) {
    int64_t n = 1;
    for (int l : labels) n *= label_dims[l];
    return n;
  };
  const int64_t batches = size_of(batch), m = size_of(m_labels), n = size_of(n_labels),
                k = size_of(k_labels);

  // A as [batch, m, k] or, transposed, [batch, k, m]; B as [batch, k, n] or [batch, n, k].
  const auto a_mk = Concat({&batch, &m_labels, &k_labels}),
             a_km = Concat({&batch, &k_labels, &m_labels});
  const auto b_kn = Concat({&batch, &k_labels, &n_labels}),
             b_nk = Concat({&batch, &n_labels, &k_labels});
  bool ta = false, tb = false;
  if (IsRowMajor(a) && a.labels == a_km && a.labels != a_mk) {
    ta = true;
  } else if (!IsRowMajor(a) || a.labels != a_mk) {
    a = Permuted(a, a_mk, label_dims);
  }
  if (IsRowMajor(b) && b.labels == b_nk && b.labels != b_kn) {
    tb = true;
  } else if (!IsRowMajor(b) || b.labels != b_kn) {
    b = Permuted(b, b_kn, label_dims);
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;

  std::vector<int64_t> out_dims;
  for (int l : out_labels) out_dims.push_back(label_dims[l]);
  Tensor result;
  if (out == nullptr) {
    result = Tensor(kDtypeOf<T>, out_dims);
    out = result.template mutable_data<T>();
  }
  if (out_labels == Concat({&batch, &m_labels, &n_labels})) {
    BatchedGemm<T>(ta, tb, batches, m, n, k, a.data, lda, m * k, b.data, ldb, k * n, out, m * n);
  } else if (out_labels == Concat({&batch, &n_labels, &m_labels})) {
    // C^T = op(B)^T op(A)^T: the same GEMM with the operands swapped, no copy of C.
    BatchedGemm<T>(!tb, !ta, batches, n, m, k, b.data, ldb, k * n, a.data, lda, m * k, out, m * n);
  } else {
    const std::vector<int> natural = Concat({&batch, &m_labels, &n_labels});
    std::vector<int64_t> natural_dims;
    for (int l : natural) natural_dims.push_back(label_dims[l]);
    Tensor tmp(kDtypeOf<T>, natural_dims);
    BatchedGemm<T>(ta, tb, batches, m, n, k, a.data, lda, m * k, b.data, ldb, k * n,
                   tmp.template mutable_data<T>(), m * n);
    PermuteInto(Contiguous<T>(std::move(tmp), natural, label_dims), out_labels, out);
  }
  if (result.empty()) {
    Operand<T> view;
    view.data = out;
    view.labels = out_labels;
    view.dims = out_dims;
    view.strides = RowMajorStrides(out_dims);
    return view;
  }
  return Contiguous<T>(std::move(result), out_labels, label_dims);
}

// One operand, unique labels: a permutation copy, then contiguous row sums when labels are
// summed.
template <typename T>
void SingleFast(const Operand<T>& op, const std::vector<int>& out_labels,
                const std::vector<int64_t>& label_dims, T* out) {
  if (HasRepeats(op.labels)) {
    ContractGeneral<T>({op}, out_labels, label_dims, out);
    return;
  }
  std::vector<int> summed;
  for (int l : op.labels) {
    if (!Contains(out_labels, l)) summed.push_back(l);
  }
  if (summed.empty()) {
    PermuteInto(op, out_labels, out);
    return;
  }
  const std::vector<int> order = Concat({&out_labels, &summed});
  const Operand<T> rows =
      IsRowMajor(op) && op.labels == order ? op : Permuted(op, order, label_dims);
  int64_t len = 1;
  for (int l : summed) len *= label_dims[l];
  int64_t count = 1;
  for (int l : out_labels) count *= label_dims[l];
  ParallelElements(count, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      Acc<T> acc = 0;
      const T* p = rows.data + r * len;
      for (int64_t i = 0; i < len; ++i) acc += ToAcc(p[i]);
      out[r] = FromAcc<T>(acc);
    }
  });
}

template <typename T>
void Run(const Problem& p, const std::vector<const Tensor*>& inputs, EinsumPath path, T* out,
         int64_t out_size) {
  if (out_size == 0) return;
  const bool any_empty =
      std::any_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return t->size() == 0; });
  if (any_empty) {  // a sum over nothing
    std::fill(out, out + out_size, T(0));
    return;
  }
  std::vector<Operand<T>> ops(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ops[i].data = inputs[i]->data<T>();
    ops[i].labels = p.input_labels[i];
    ops[i].dims = inputs[i]->shape();
    ops[i].strides = RowMajorStrides(ops[i].dims);
  }
  if (path == EinsumPath::kGeneral) {
    ContractGeneral<T>(ops, p.output_labels, p.label_dims, out);
    return;
  }
  // Size-1 axes carry no layout: dropping them turns broadcasting into an absent label and
  // leaves each operand row-major over the rest. The output's size-1 dims drop out the same way.
  for (auto& op : ops) {
    Operand<T> kept;
    kept.data = op.data;
    for (size_t a = 0; a < op.labels.size(); ++a) {
      if (op.dims[a] == 1) continue;
      kept.labels.push_back(op.labels[a]);
      kept.dims.push_back(op.dims[a]);
      kept.strides.push_back(op.strides[a]);
    }
    op = std::move(kept);
  }
  std::vector<int> out_labels;
  for (int l : p.output_labels) {
    if (p.label_dims[l] != 1) out_labels.push_back(l);
  }
  if (ops.size() == 1) {
    SingleFast<T>(ops[0], out_labels, p.label_dims, out);
    return;
  }
  Operand<T> acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    const bool last = i + 1 == ops.size();
    std::vector<int> labels = out_labels;
    if (!last) {
      // Keep what the output or a later operand still needs, in order of appearance.
      std::vector<char> needed(p.label_dims.size(), 0);
      for (int l : out_labels) needed[l] = 1;
      for (size_t j = i + 1; j < ops.size(); ++j) {
        for (int l : ops[j].labels) needed[l] = 1;
      }
      labels.clear();
      for (const auto* src : {&acc.labels, &ops[i].labels}) {
        for (int l : *src) {
          if (needed[l] && !Contains(labels, l)) labels.push_back(l);
        }
      }
    }
    acc = ContractPair<T>(std::move(acc), ops[i], labels, p.label_dims, last ? out : nullptr);
  }
}

}  // namespace

EinsumEquation ParseEinsumEquation(const KernelContext& ctx, const std::string& equation,
                                   int input_count) {
  EinsumEquation eq;
  eq.text = equation;
  std::string s;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  const size_t arrow = s.find("->");
  if (arrow != std::string::npos && s.find("->", arrow + 2) != std::string::npos) {
    FailEquation(ctx, equation, "more than one '->'");
  }
  const std::string lhs = s.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(terms.size()) != input_count) {
    FailEquation(ctx, equation, fmt::format("{} terms for {} inputs", terms.size(), input_count));
  }
  std::vector<int> uses(kLetters, 0);
  bool any_ellipsis = false;
  for (const auto& term : terms) {
    eq.inputs.push_back(ParseTerm(ctx, equation, term));
    for (int l : eq.inputs.back()) {
      if (l == kEinsumEllipsis) {
        any_ellipsis = true;
      } else {
        ++uses[l];
      }
    }
  }
  eq.explicit_output = arrow != std::string::npos;
  if (eq.explicit_output) {
    eq.output = ParseTerm(ctx, equation, s.substr(arrow + 2));
    std::vector<char> seen(kLetters, 0);
    for (int l : eq.output) {
      if (l == kEinsumEllipsis) continue;
      if (seen[l]) {
        FailEquation(ctx, equation, fmt::format("output label '{}' repeats", TermText({l})));
      }
      seen[l] = 1;
      if (uses[l] == 0) {
        FailEquation(ctx, equation,
                     fmt::format("output label '{}' is in no input term", TermText({l})));
      }
    }
  } else {
    // Implicit mode: "..." first, then the labels used exactly once, alphabetically.
    if (any_ellipsis) eq.output.push_back(kEinsumEllipsis);
    for (int l = 0; l < kLetters; ++l) {
      if (uses[l] == 1) eq.output.push_back(l);
    }
  }
  return eq;
}

Tensor EvaluateEinsum(const KernelContext& ctx, const EinsumEquation& eq,
                      const std::vector<const Tensor*>& inputs, EinsumPath path) {
  if (inputs.size() != eq.inputs.size()) {
    ctx.Fail(fmt::format("equation '{}' has {} terms for {} inputs", eq.text, eq.inputs.size(),
                         inputs.size()));
  }
  const int32_t dtype = inputs[0]->dtype();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i]->dtype() != dtype) {
      ctx.Fail(fmt::format("input {} {} has another element type than input 0 {}", i,
                           inputs[i]->DebugString(), inputs[0]->DebugString()));
    }
  }
  const Problem p = Resolve(ctx, eq, inputs);
  Tensor out(dtype, p.output_shape);
  DispatchNumeric(ctx, dtype, [&](auto tag) {
    using T = decltype(tag);
    Run<T>(p, inputs, path, out.mutable_data<T>(), out.size());
  });
  return out;
}

}  // namespace kernels

namespace {

using kernels::EinsumEquation;

EinsumEquation EquationOf(const KernelContext& ctx) {
  const auto* attr = ctx.Attribute("equation");
  if (attr == nullptr) ctx.Fail("attribute 'equation' is required");
  if (attr->type() != onnx::AttributeProto::STRING) {
    ctx.Fail("attribute 'equation' must be a string");
  }
  return kernels::ParseEinsumEquation(ctx, attr->s(), ctx.node().input_size());
}

// The equation is parsed once, at plan time, so a malformed one fails the Session's construction.
std::shared_ptr<const void> EinsumPrepare(const KernelContext& ctx) {
  ctx.AllowAttributes({"equation"});
  return std::make_shared<const EinsumEquation>(EquationOf(ctx));
}

void EinsumKernel(KernelContext& ctx) {
  const EinsumEquation* prepared = ctx.prepared<EinsumEquation>();
  EinsumEquation parsed;
  if (prepared == nullptr) {
    ctx.AllowAttributes({"equation"});
    parsed = EquationOf(ctx);
    prepared = &parsed;
  }
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < ctx.input_count(); ++i) inputs.push_back(&ctx.input(i));
  ctx.output(0) = kernels::EvaluateEinsum(ctx, *prepared, inputs, kernels::EinsumPath::kFast);
}

}  // namespace

void RegisterEinsumKernels(KernelRegistry& r) {
  r.Register("", "Einsum", 12, kLatest, EinsumKernel, EinsumPrepare);
}

}  // namespace porttool::runtime
