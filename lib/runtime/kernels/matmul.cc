// MatMul (numpy semantics: 1-D promotion and batch broadcasting) and Gemm. Float and double go
// to BLAS through gemm.h; integer types use a plain loop (they only appear in shape arithmetic).
// When B has no batch dims, A's batches are folded into one tall GEMM, the shape transformer
// layers (x @ W) take.
#include <fmt/format.h>

#include <algorithm>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/gemm.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/matmul_batch.h"
#include "lib/runtime/kernels/sgemm.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using kernels::BatchOffsets;
using kernels::BroadcastBatch;
using kernels::TP;

// Row-major C = alpha * op(A) op(B) + beta * C for any numeric T; BLAS for float and double.
template <typename T>
void GemmAny(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
             const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    kernels::Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
        }
        c[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * c[i * ldc + j]);
      }
    }
  }
}

template <typename Fn>
void DispatchMatMulTypes(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  kernels::Dispatch<float, double, int32_t, int64_t, uint32_t, uint64_t>(ctx, dtype, fn);
}

// Plan time: a constant 2-D float B (a layer's weights) is packed once for the GEMM; without it
// every column piece of every run packed its share again.
std::shared_ptr<const void> PrepareMatMul(const KernelContext& ctx) {
  if (!ctx.has_input(1)) return nullptr;
  const Tensor& b = ctx.input(1);
  if (b.dtype() != TP::FLOAT || b.rank() != 2 || b.size() == 0) return nullptr;
  return std::make_shared<kernels::PackedB>(
      kernels::PackMatrixB(false, b.dim(0), b.dim(1), b.data<float>(), b.dim(1)));
}

void MatMulKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.Fail("A and B must have the same element type");
  if (a.rank() == 0 || b.rank() == 0) ctx.Fail("MatMul inputs must have rank >= 1");
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    ctx.Fail(
        fmt::format("inner dimensions differ: A {} and B {}", a.DebugString(), b.DebugString()));
  }
  const std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const std::vector<int64_t> out_batch = BroadcastBatch(ctx, a_batch, b_batch);
  std::vector<int64_t> out_shape = out_batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  Tensor& y = ctx.output(0) = Tensor(a.dtype(), out_shape);
  if (y.size() == 0) return;
  const std::vector<int64_t> a_off = BatchOffsets(out_batch, a_batch, m * k);
  const std::vector<int64_t> b_off = BatchOffsets(out_batch, b_batch, k * n);
  const int64_t batches = static_cast<int64_t>(a_off.size());
  // B shared by every batch and A contiguous: one GEMM with the batches stacked as rows.
  const bool fold = std::all_of(b_off.begin(), b_off.end(), [](int64_t o) { return o == 0; }) &&
                    std::is_sorted(a_off.begin(), a_off.end()) &&
                    (batches == 1 || a_off[1] - a_off[0] == m * k) && a.size() == batches * m * k;
  const int64_t rows = fold ? batches * m : m;
  const int64_t gemms = fold ? 1 : batches;
  const auto* packed = ctx.prepared<kernels::PackedB>();
  if (packed &&
      (b.rank() != 2 || packed->k != k || packed->n != n || kernels::GemmUsesOpenBlas())) {
    packed = nullptr;
  }
  // Few GEMMs: split each along its longer side of C, so each piece packs the smaller share of
  // the operands (a 256 x 1536 output in column pieces packs B once, not once per row piece).
  // Even with B packed at plan time: row pieces of 32 rows streamed all of B from memory for each
  // piece (the transformer block's MLP took twice as long).
  const bool split = gemms < kernels::kWorkPieces;
  const bool by_columns = split && n > rows;
  const int64_t row_block = split && !by_columns ? kernels::PieceSize(rows, 16) : rows;
  constexpr int64_t kAlign = kernels::kSgemmColAlign;
  const int64_t col_block =
      by_columns ? (kernels::PieceSize(n, 64) + kAlign - 1) / kAlign * kAlign : n;
  const int64_t row_blocks = (rows + row_block - 1) / row_block;
  const int64_t col_blocks = (n + col_block - 1) / col_block;
  const int64_t blocks = row_blocks * col_blocks;
  DispatchMatMulTypes(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.mutable_data<T>();
    kernels::ParallelMacs(
        gemms * blocks, row_block * col_block * k, [&](int64_t begin, int64_t end) {
          for (int64_t item = begin; item < end; ++item) {
            const int64_t g = item / blocks, tile = item % blocks;
            const int64_t r0 = (tile / col_blocks) * row_block,
                          c0 = (tile % col_blocks) * col_block;
            const int64_t r = std::min(row_block, rows - r0), w = std::min(col_block, n - c0);
            GemmAny<T>(false, false, r, w, k, T(1), pa + a_off[g] + r0 * k, k, pb + b_off[g] + c0,
                       n, T(0), py + g * m * n + r0 * n + c0, n);
          }
        });
  });
}

void GemmKernel(KernelContext& ctx) {
  // Gemm-6 had `broadcast`: 0 demands C of exactly [M, N]; 7+ always broadcasts.
  if (ctx.opset() < 7) {
    ctx.AllowAttributes({"alpha", "beta", "broadcast", "transA", "transB"});
  } else {
    ctx.AllowAttributes({"alpha", "beta", "transA", "transB"});
  }
  const bool broadcast_c = ctx.opset() >= 7 || ctx.GetInt("broadcast", 0) != 0;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2) {
    ctx.Fail(fmt::format("A {} and B {} must be 2-D", a.DebugString(), b.DebugString()));
  }
  if (a.dtype() != b.dtype()) ctx.Fail("A and B must have the same element type");
  const bool ta = ctx.GetInt("transA", 0) != 0, tb = ctx.GetInt("transB", 0) != 0;
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  if ((tb ? b.dim(1) : b.dim(0)) != k) {
    ctx.Fail(fmt::format("inner dimensions differ: A {} (transA={}) and B {} (transB={})",
                         a.DebugString(), ta, b.DebugString(), tb));
  }
  const double alpha = ctx.GetFloat("alpha", 1.f), beta = ctx.GetFloat("beta", 1.f);
  Tensor& y = ctx.output(0) = Tensor(a.dtype(), {m, n});
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  // C broadcasts unidirectionally to [M, N].
  int64_t c_row_step = 0, c_col_step = 0;
  if (c != nullptr) {
    if (c->dtype() != a.dtype()) ctx.Fail("C must have the element type of A and B");
    std::vector<int64_t> cs = c->shape();
    if (cs.size() > 2) ctx.Fail(fmt::format("C {} must have rank <= 2", c->DebugString()));
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    if ((cs[0] != 1 && cs[0] != m) || (cs[1] != 1 && cs[1] != n) ||
        (!broadcast_c && (c->rank() != 2 || cs[0] != m || cs[1] != n))) {
      ctx.Fail(fmt::format("C {} cannot be broadcast to [{}, {}]", c->DebugString(), m, n));
    }
    c_row_step = cs[0] == 1 ? 0 : cs[1];
    c_col_step = cs[1] == 1 ? 0 : 1;
  }
  if (y.size() == 0) return;
  DispatchMatMulTypes(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.mutable_data<T>();
    const bool use_c = c != nullptr && beta != 0;
    if (use_c) {
      const T* pc = c->data<T>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) py[i * n + j] = pc[i * c_row_step + j * c_col_step];
    }
    const int64_t block = kernels::PieceSize(m, 16);
    kernels::ParallelMacs((m + block - 1) / block, block * n * k, [&](int64_t begin, int64_t end) {
      for (int64_t bi = begin; bi < end; ++bi) {
        const int64_t r0 = bi * block, r = std::min(block, m - r0);
        const T* pa = a.data<T>() + (ta ? r0 : r0 * a.dim(1));
        GemmAny<T>(ta, tb, r, n, k, static_cast<T>(alpha), pa, a.dim(1), b.data<T>(), b.dim(1),
                   use_c ? static_cast<T>(beta) : T(0), py + r0 * n, n);
      }
    });
  });
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  r.Register("", "MatMul", 1, 17, MatMulKernel, PrepareMatMul);
  r.Register("", "Gemm", 6, 17, GemmKernel);
}

}  // namespace porttool::runtime
