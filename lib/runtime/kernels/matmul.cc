// MatMul (numpy semantics: 1-D promotion and batch broadcasting) and Gemm. Float and double go
// to BLAS through gemm.h; integer types use a plain loop (they only appear in shape arithmetic).
// When B has no batch dims, A's batches are folded into one tall GEMM, the shape transformer
// layers (x @ W) take.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/epilogue_rows.h"
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
// every column piece of every run packed its share again (and a one-row Gemm, hey_jarvis's
// 1 x 1536 x 128 layer, spent most of its time packing B).
std::shared_ptr<const void> PackConstantB(const KernelContext& ctx, bool trans_b) {
  if (!ctx.has_input(1)) return nullptr;
  const Tensor& b = ctx.input(1);
  if (b.dtype() != TP::FLOAT || b.rank() != 2 || b.size() == 0) return nullptr;
  const int64_t k = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  return std::make_shared<kernels::PackedB>(
      kernels::PackMatrixB(trans_b, k, n, b.data<float>(), b.dim(1)));
}
std::shared_ptr<const void> PrepareMatMul(const KernelContext& ctx) {
  return PackConstantB(ctx, false);
}
std::shared_ptr<const void> PrepareGemm(const KernelContext& ctx) {
  return PackConstantB(ctx, ctx.GetInt("transB", 0) != 0);
}

// The plan-time B when it is usable for this call (shapes as packed, porttool's own GEMM).
const kernels::PackedB* UsablePackedB(const KernelContext& ctx, int64_t k, int64_t n) {
  const auto* packed = ctx.prepared<kernels::PackedB>();
  if (packed && (packed->k != k || packed->n != n)) return nullptr;
  return packed;
}

// How `gemms` products with C of [rows x n] are cut into tiles for the pool. Few GEMMs: split
// each along its longer side of C, so each piece packs the smaller share of the operands (a
// 256 x 1536 output in column pieces packs B once, not once per row piece). Even with B packed at
// plan time: row pieces of 32 rows streamed all of B from memory for each piece (the transformer
// block's MLP took twice as long). With one thread there is no cut: every piece re-streams the
// packed A, which for the MLP's down projection (256 x 1536) does not fit in L2 (1.77 ms as six
// pieces, 1.53 ms whole). The cut never changes a bit of C: sgemm.cc sums each element in one
// order whatever the tile.
struct GemmTiles {
  int64_t rows = 0, n = 0, row_block = 0, col_block = 0, row_blocks = 0, col_blocks = 0;
  int64_t count() const { return row_blocks * col_blocks; }
  // Tile t's first row and column and its extent.
  void Locate(int64_t t, int64_t& r0, int64_t& c0, int64_t& r, int64_t& w) const {
    r0 = (t / col_blocks) * row_block;
    c0 = (t % col_blocks) * col_block;
    r = std::min(row_block, rows - r0);
    w = std::min(col_block, n - c0);
  }
};
GemmTiles TileGemm(int64_t gemms, int64_t rows, int64_t n) {
  GemmTiles t{rows, n, rows, n, 1, 1};
  const bool split = gemms < kernels::kWorkPieces && NumThreads() > 1;
  constexpr int64_t kAlign = kernels::kSgemmColAlign;
  if (split && n > rows) {
    t.col_block = (kernels::PieceSize(n, 64) + kAlign - 1) / kAlign * kAlign;
  } else if (split) {
    t.row_block = kernels::PieceSize(rows, 16);
  }
  t.row_blocks = (rows + t.row_block - 1) / t.row_block;
  t.col_blocks = (n + t.col_block - 1) / t.col_block;
  return t;
}

// Operands packed ahead of the tiles: B at plan time, A once per call (for column pieces).
struct PackedOperands {
  const kernels::PackedB* b = nullptr;
  const kernels::PackedA* a = nullptr;  // only with b; rows from 0
};

// Column pieces over a packed B would each pack all of A again (the transformer block's MatMuls
// spent 12% of the block's time in PackA): A is packed once for all of them. So is a single
// piece wider than one B block (sgemm.cc's kNc), which packs A once per block.
std::optional<kernels::PackedA> PackAOnceForColumnPieces(const kernels::PackedB* b,
                                                         const GemmTiles& tiles, bool ta,
                                                         const float* a, int64_t lda, int64_t k) {
  if (b == nullptr || tiles.row_blocks != 1) return std::nullopt;
  return kernels::PackMatrixA(ta, tiles.rows, k, a, lda);
}

// One tile: C[r x w] (c at its first element) = alpha op(A) op(B)[:, c0:c0+w] + beta C, from
// the packed operands when there are (alpha 1 only: the packed GEMM has no alpha). a is A at row
// r0.
template <typename T>
void GemmTile(const PackedOperands& packed, bool ta, bool tb, int64_t r0, int64_t r, int64_t c0,
              int64_t w, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
              T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (packed.b != nullptr && alpha == 1.f) {
      if (packed.a != nullptr) {
        kernels::SgemmPackedAB(*packed.a, r0, r, *packed.b, c0, w, beta, c, ldc);
      } else {
        kernels::SgemmPackedB(ta, r, c0, w, a, lda, *packed.b, beta, c, ldc);
      }
      return;
    }
  }
  GemmAny<T>(ta, tb, r, w, k, alpha, a, lda, b + (tb ? c0 * ldb : c0), ldb, beta, c, ldc);
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
  // Float products write every element (beta = 0); the zero fill cost 3% of a transformer block.
  Tensor& y = ctx.output(0) = a.dtype() == TP::FLOAT ? Tensor::Uninitialized(TP::FLOAT, out_shape)
                                                     : Tensor(a.dtype(), out_shape);
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
  const kernels::PackedB* packed = b.rank() == 2 ? UsablePackedB(ctx, k, n) : nullptr;
  const GemmTiles tiles = TileGemm(gemms, rows, n);
  const int64_t blocks = tiles.count();
  // The fused tail (a linear layer's bias, residual, activation), applied to each tile while it
  // is in cache: float only, and only a per-column one (fusion.h).
  const Epilogue* epilogue =
      a.dtype() == TP::FLOAT ? kernels::UsableEpilogue(ctx.epilogue(), y) : nullptr;
  if (epilogue && !epilogue->spec->per_column) epilogue = nullptr;
  const float* residual =
      epilogue && epilogue->residual ? epilogue->residual->data<float>() : nullptr;
  if (epilogue) ctx.mark_epilogue_applied();
  std::optional<kernels::PackedA> packed_a;
  if (gemms == 1 && a.dtype() == TP::FLOAT) {
    packed_a = PackAOnceForColumnPieces(packed, tiles, false, a.data<float>(), k, k);
  }
  const PackedOperands operands{packed, packed_a ? &*packed_a : nullptr};
  DispatchMatMulTypes(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.mutable_data<T>();
    kernels::ParallelMacs(
        gemms * blocks, tiles.row_block * tiles.col_block * k, [&](int64_t begin, int64_t end) {
          for (int64_t item = begin; item < end; ++item) {
            const int64_t g = item / blocks;
            int64_t r0, c0, r, w;
            tiles.Locate(item % blocks, r0, c0, r, w);
            const int64_t offset = g * m * n + r0 * n + c0;
            GemmTile<T>(operands, false, false, r0, r, c0, w, k, T(1), pa + a_off[g] + r0 * k, k,
                        pb + b_off[g], n, T(0), py + offset, n);
            if constexpr (std::is_same_v<T, float>) {
              if (epilogue) {
                kernels::FinishColumns(nullptr, epilogue, c0, r, w, n, py + offset,
                                       residual ? residual + offset : nullptr);
              }
            }
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
  const kernels::PackedB* packed = UsablePackedB(ctx, k, n);
  const GemmTiles tiles = TileGemm(1, m, n);
  std::optional<kernels::PackedA> packed_a;
  if (a.dtype() == TP::FLOAT && alpha == 1.0) {
    packed_a = PackAOnceForColumnPieces(packed, tiles, ta, a.data<float>(), a.dim(1), k);
  }
  const PackedOperands operands{packed, packed_a ? &*packed_a : nullptr};
  DispatchMatMulTypes(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.mutable_data<T>();
    const bool use_c = c != nullptr && beta != 0;
    if (use_c) {
      const T* pc = c->data<T>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) py[i * n + j] = pc[i * c_row_step + j * c_col_step];
    }
    const T* pa = a.data<T>();
    const int64_t lda = a.dim(1);
    kernels::ParallelMacs(tiles.count(), tiles.row_block * tiles.col_block * k,
                          [&](int64_t begin, int64_t end) {
                            for (int64_t t = begin; t < end; ++t) {
                              int64_t r0, c0, r, w;
                              tiles.Locate(t, r0, c0, r, w);
                              GemmTile<T>(operands, ta, tb, r0, r, c0, w, k, static_cast<T>(alpha),
                                          pa + (ta ? r0 : r0 * lda), lda, b.data<T>(), b.dim(1),
                                          use_c ? static_cast<T>(beta) : T(0), py + r0 * n + c0, n);
                            }
                          });
  });
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  r.Register("", "MatMul", 1, 17, MatMulKernel, PrepareMatMul);
  r.AcceptEpilogue("", "MatMul");
  r.Register("", "Gemm", 6, 17, GemmKernel, PrepareGemm);
}

}  // namespace porttool::runtime
