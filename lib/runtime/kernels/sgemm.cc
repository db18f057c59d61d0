// porttool's own single-precision GEMM (issue 28): packed panels and a 6x16 register-blocked
// micro-kernel in GCC vector extensions (vector_math.h's V8f), cloned for AVX-512 and AVX2+FMA
// (simd.h); NEON and any other target get the same code through the compiler's vectoriser. A
// CPU with x86-64-v4 (AVX-512) runs a 6x32 tile of zmm sums instead (MacroTile512) over the same
// packed panels. Single-threaded: callers split C into tiles across porttool's pool.
//
// Why not OpenBLAS: Debian's pthread OpenBLAS computed the last rows of an M=32 GEMM differently
// when called from a pool thread than from the main thread (rec's pointwise convs differed in the
// last bit at 1 and 2 threads), and its serial build raced when two pool threads called it.
// Here every element of C is the sum over k in increasing order within blocks of kKc, blocks
// added in order: the same bits however C is split, by whom, and at any thread count.
#include "lib/runtime/kernels/sgemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"

namespace porttool::runtime::kernels {
namespace {

constexpr int kMr = 6;         // rows of C per micro-kernel: 6 accumulators of 16 floats
constexpr int kNr = 16;        // columns
constexpr int64_t kKc = 256;   // depth of a packed block (a B micro-panel of 16 KB stays in L1)
constexpr int64_t kMc = 96;    // rows of a packed A block (96 KB in L2)
constexpr int64_t kNc = 1024;  // columns of a packed B block

struct Operand {
  const float* p;
  int64_t ld;
  bool trans;
  // Element (row, col) of op(X).
  float At(int64_t row, int64_t col) const { return trans ? p[col * ld + row] : p[row * ld + col]; }
};

// A[i0 .. i0+rows) x [p0 .. p0+kc) into panels of kMr rows: panel[p * kMr + i], zero-padded.
void PackA(const Operand& a, int64_t i0, int64_t rows, int64_t p0, int64_t kc, float* out) {
  for (int64_t ip = 0; ip < rows; ip += kMr) {
    const int64_t r = std::min<int64_t>(kMr, rows - ip);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < r; ++i) out[p * kMr + i] = a.At(i0 + ip + i, p0 + p);
      for (int64_t i = r; i < kMr; ++i) out[p * kMr + i] = 0.f;
    }
    out += kc * kMr;
  }
}

// One step of a 16x16 transpose in registers: the off-diagonal s x s blocks of the 2s x 2s
// blocks of rows a and b (= a + s) trade places. Steps s = 8, 4, 2, 1 transpose the matrix.
template <int s>
PORTTOOL_ALWAYS_INLINE void SwapBlocks(V16f& a, V16f& b) {
  constexpr auto pick = [](int lane, bool upper) {
    const bool high = (lane & s) != 0;  // lanes of a that take b's, and b's that keep theirs
    return upper ? (high ? lane + 16 : lane + s) : (high ? 16 + lane - s : lane);
  };
#define PORTTOOL_LANES(up)                                                                   \
  pick(0, up), pick(1, up), pick(2, up), pick(3, up), pick(4, up), pick(5, up), pick(6, up), \
      pick(7, up), pick(8, up), pick(9, up), pick(10, up), pick(11, up), pick(12, up),       \
      pick(13, up), pick(14, up), pick(15, up)
  const V16f low = __builtin_shufflevector(a, b, PORTTOOL_LANES(false));
  const V16f high = __builtin_shufflevector(a, b, PORTTOOL_LANES(true));
#undef PORTTOOL_LANES
  a = low;
  b = high;
}

template <int s>
PORTTOOL_ALWAYS_INLINE void SwapAllBlocks(V16f (&r)[16]) {
  for (int i = 0; i < 16; ++i) {
    if ((i & s) == 0) SwapBlocks<s>(r[i], r[i + s]);
  }
}

// 16 panel rows of a transposed B (16 columns x 16 depths, each column a contiguous run of
// `ld`-strided rows) written as 16 depths x 16 columns: a transposed B (Gemm's transB, an STFT
// conv's strided signal) was gathered an element at a time: 5% of melspectrogram's conv time.
PORTTOOL_SIMD_CLONES void TransposeBlock16(const float* src, int64_t ld, float* dst) {
  V16f r[16];
  for (int j = 0; j < 16; ++j) std::memcpy(&r[j], src + j * ld, sizeof(V16f));
  SwapAllBlocks<8>(r);
  SwapAllBlocks<4>(r);
  SwapAllBlocks<2>(r);
  SwapAllBlocks<1>(r);
  for (int p = 0; p < 16; ++p) std::memcpy(dst + p * 16, &r[p], sizeof(V16f));
}

// B[p0 .. p0+kc) x [j0 .. j0+cols) into panels of kNr columns: panel[p * kNr + j], zero-padded.
void PackB(const Operand& b, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float* out) {
  static_assert(kNr == 16, "TransposeBlock16 fills one panel's 16 columns");
  for (int64_t jp = 0; jp < cols; jp += kNr) {
    const int64_t w = std::min<int64_t>(kNr, cols - jp);
    int64_t p = 0;
    if (b.trans && w == kNr) {
      for (; p + 16 <= kc; p += 16) {
        TransposeBlock16(b.p + (j0 + jp) * b.ld + p0 + p, b.ld, out + p * kNr);
      }
    }
    for (; p < kc; ++p) {
      float* dst = out + p * kNr;
      if (!b.trans && w == kNr) {
        std::memcpy(dst, b.p + (p0 + p) * b.ld + j0 + jp, kNr * sizeof(float));
      } else {
        for (int64_t j = 0; j < w; ++j) dst[j] = b.At(p0 + p, j0 + jp + j);
        for (int64_t j = w; j < kNr; ++j) dst[j] = 0.f;
      }
    }
    out += kc * kNr;
  }
}

// How a micro-tile's sums reach C: the first depth block writes alpha * acc (+ beta * C), later
// ones add alpha * acc.
struct Store {
  float alpha, beta;
  bool first;
  template <typename T>
  PORTTOOL_ALWAYS_INLINE T Apply(T acc, T c) const {
    const T v = alpha == 1.f ? acc : alpha * acc;
    if (!first) return c + v;
    return beta == 0.f ? v : beta * c + v;
  }
};

// Writes a finished tile's sums (kMr rows of two vectors V, the first kVectors of them used) to
// C: whole vectors when the tile is full width, else element by element through a copy.
template <typename V, int kVectors>
PORTTOOL_ALWAYS_INLINE void StoreTile(const V (&all)[kMr][2], float* c, int64_t ldc, int64_t rows,
                                      int64_t cols, const Store& s) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  if (cols == kVectors * kLanes && s.first && s.beta == 0.f) {
    // Nothing of C is read: on a shallow GEMM (a pointwise conv over 16 channels) loading the
    // fresh output only to discard it was the kernel's main cost.
    for (int64_t i = 0; i < rows; ++i) {
      for (int h = 0; h < kVectors; ++h) {
        const V v = s.alpha == 1.f ? all[i][h] : s.alpha * all[i][h];
        std::memcpy(c + i * ldc + kLanes * h, &v, sizeof v);
      }
    }
    return;
  }
  if (cols == kVectors * kLanes) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int h = 0; h < kVectors; ++h) {
        float* dst = c + i * ldc + kLanes * h;
        V v;
        std::memcpy(&v, dst, sizeof v);
        v = s.Apply(all[i][h], v);
        std::memcpy(dst, &v, sizeof v);
      }
    }
    return;
  }
  float tile[kMr][2 * kLanes];
  std::memcpy(tile, all, sizeof tile);
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) row[j] = s.Apply(tile[i][j], row[j]);
  }
}

// The 6x16 tile as twelve named 8-float accumulators: an array of vectors indexed in a loop
// made GCC keep them on the stack (5-10x slower); named ones stay in the 16 AVX registers.
PORTTOOL_ALWAYS_INLINE void MicroTile(int64_t kc, const float* ap, const float* bp, int64_t b_step,
                                      float* c, int64_t ldc, int64_t rows, int64_t cols,
                                      const Store& s) {
  V8f c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{}, c40{}, c41{}, c50{}, c51{};
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p, ap += kMr, bp += b_step) {
    V8f b0, b1;
    std::memcpy(&b0, bp, sizeof b0);
    std::memcpy(&b1, bp + 8, sizeof b1);
    c00 += b0 * ap[0];
    c01 += b1 * ap[0];
    c10 += b0 * ap[1];
    c11 += b1 * ap[1];
    c20 += b0 * ap[2];
    c21 += b1 * ap[2];
    c30 += b0 * ap[3];
    c31 += b1 * ap[3];
    c40 += b0 * ap[4];
    c41 += b1 * ap[4];
    c50 += b0 * ap[5];
    c51 += b1 * ap[5];
  }
  const V8f all[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  StoreTile<V8f, 2>(all, c, ldc, rows, cols, s);
}

// The B block of one (depth, columns) step: packed panels of kNr columns, or, for a shallow B
// that is not transposed, its rows in place (`direct`, row stride `ld`) for every whole panel and
// a packed copy of the partial last one only. Both feed the micro-kernel the same values in the
// same order. On PP-OCRv4 det's pointwise convs over few channels (depth 12-48) packing B was
// a copy per multiply-add row.
struct BBlock {
  const float* packed = nullptr;
  const float* direct = nullptr;
  int64_t ld = 0;
};

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
using V16f = float __attribute__((vector_size(64)));

// The AVX-512 tile: 6 rows x `kPanels` B panels (16 or 32 columns) as 6 x kPanels zmm
// accumulators. The 6x16 tile above holds 12 ymm sums and so feeds at most half the FMA width
// of a core with 512-bit pipes (AMD Zen 5, Intel server cores): the same GEMMs ran at 100-110
// GFLOP/s against ONNX Runtime's ~170. Each element is still the FMA chain over p in order, as
// in MicroTile, so both tiles give the same bits.
//
// kRows is the tile's live rows: a partial tile (the last 2 rows of M = 32, or 8 positions as 6 +
// 2) skips the sums of its missing rows instead of computing six and storing two.
template <int kPanels, int kRows>
PORTTOOL_AVX512 PORTTOOL_ALWAYS_INLINE void MicroTile512(int64_t kc, const float* ap,
                                                         const float* bp0, const float* bp1,
                                                         int64_t b_step, float* c, int64_t ldc,
                                                         int64_t cols, const Store& s) {
  V16f c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{}, c40{}, c41{}, c50{}, c51{};
#define PORTTOOL_TILE_ROW(i)                           \
  if constexpr (kRows > i) {                           \
    c##i##0 += b0 * ap[i];                             \
    if constexpr (kPanels == 2) c##i##1 += b1 * ap[i]; \
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p, ap += kMr, bp0 += b_step, bp1 += b_step) {
    V16f b0, b1{};
    std::memcpy(&b0, bp0, sizeof b0);
    if constexpr (kPanels == 2) std::memcpy(&b1, bp1, sizeof b1);
    PORTTOOL_TILE_ROW(0)
    PORTTOOL_TILE_ROW(1)
    PORTTOOL_TILE_ROW(2)
    PORTTOOL_TILE_ROW(3)
    PORTTOOL_TILE_ROW(4)
    PORTTOOL_TILE_ROW(5)
  }
#undef PORTTOOL_TILE_ROW
  const V16f all[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  StoreTile<V16f, kPanels>(all, c, ldc, kRows, cols, s);
}

template <int kPanels>
PORTTOOL_AVX512 PORTTOOL_ALWAYS_INLINE void RowsTile512(int64_t rows, int64_t kc, const float* ap,
                                                        const float* bp0, const float* bp1,
                                                        float* c, int64_t ldc, int64_t cols,
                                                        const Store& s) {
  switch (rows) {
    case 1:
      return MicroTile512<kPanels, 1>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
    case 2:
      return MicroTile512<kPanels, 2>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
    case 3:
      return MicroTile512<kPanels, 3>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
    case 4:
      return MicroTile512<kPanels, 4>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
    case 5:
      return MicroTile512<kPanels, 5>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
    default:
      return MicroTile512<kPanels, 6>(kc, ap, bp0, bp1, kNr, c, ldc, cols, s);
  }
}

// B is always packed here (DirectDepth() is 0 with this tile).
PORTTOOL_AVX512 void MacroTile512(int64_t mc, int64_t nc, int64_t kc, const float* ap,
                                  const BBlock& b, float* c, int64_t ldc, const Store& s) {
  for (int64_t jr = 0; jr < nc; jr += 2 * kNr) {
    const int64_t cols = std::min<int64_t>(2 * kNr, nc - jr);
    const float* b0 = b.packed + (jr / kNr) * kc * kNr;
    const bool pair = cols > kNr;  // two panels in one tile
    for (int64_t ir = 0; ir < mc; ir += kMr) {
      const int64_t rows = std::min<int64_t>(kMr, mc - ir);
      const float* a = ap + (ir / kMr) * kc * kMr;
      float* ct = c + ir * ldc + jr;
      if (pair) {
        RowsTile512<2>(rows, kc, a, b0, b0 + kc * kNr, ct, ldc, cols, s);
      } else {
        RowsTile512<1>(rows, kc, a, b0, b0, ct, ldc, cols, s);
      }
    }
  }
}

#endif

// One packed A block times one B block into C.
PORTTOOL_SIMD_CLONES void MacroTile(int64_t mc, int64_t nc, int64_t kc, const float* ap,
                                    const BBlock& b, float* c, int64_t ldc, const Store& s) {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  if (HasAvx512()) return MacroTile512(mc, nc, kc, ap, b, c, ldc, s);
#endif
  const int64_t whole = b.direct ? nc / kNr * kNr : 0;
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t cols = std::min<int64_t>(kNr, nc - jr);
    const bool in_place = jr < whole;
    const float* b_panel = in_place ? b.direct + jr : b.packed + ((jr - whole) / kNr) * kc * kNr;
    const int64_t b_step = in_place ? b.ld : kNr;
    for (int64_t ir = 0; ir < mc; ir += kMr) {
      const int64_t rows = std::min<int64_t>(kMr, mc - ir);
      MicroTile(kc, ap + (ir / kMr) * kc * kMr, b_panel, b_step, c + ir * ldc + jr, ldc, rows, cols,
                s);
    }
  }
}

// Packing buffers, one pair per thread, grown to the largest block seen.
float* Buffer(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

namespace {

// C = alpha op(A) op(B) + beta C with the A blocks from `a_block(ic, mc, pc, kc)` and the B
// blocks from `b_block(pc, kc, jc, nc)`: packed on the fly, or taken from a PackedA / PackedB.
// Both give the same panels, so the same bits.
template <typename ABlockFn, typename BBlockFn>
void GemmLoop(int64_t m, int64_t n, int64_t k, float alpha, float beta, float* c, int64_t ldc,
              const ABlockFn& a_block, const BBlockFn& b_block) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.f) {  // the math says C = beta * C (and 0 where beta is 0)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      const BBlock bp = b_block(pc, kc, jc, nc);
      const Store store{alpha, beta, pc == 0};
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        MacroTile(mc, nc, kc, a_block(ic, mc, pc, kc), bp, c + ic * ldc + jc, ldc, store);
      }
    }
  }
}

// Depth up to which a non-transposed B is read in place rather than packed (its kc rows of a
// panel then span kc cache lines, few enough to stay in L1). Not with the AVX-512 tile: there a
// 32-column panel read in place was 1.1-1.8x slower than packing it (M=32, N=4096 or 4000,
// K=16..64: 57-126 vs 105-133 GFLOP/s), most where the row stride is a multiple of 4 KB, as
// in det's 320x320 and 160x160 planes, whose rows then share one L1 set.
int64_t DirectDepth() {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  if (HasAvx512()) return 0;
#endif
  return 64;
}

// Packs B's blocks on the fly into a per-thread buffer (only the partial last panel when B is
// shallow enough to read in place).
struct PackOnTheFlyB {
  Operand b;
  int64_t k;
  PORTTOOL_ALWAYS_INLINE BBlock operator()(int64_t pc, int64_t kc, int64_t jc, int64_t nc) const {
    thread_local std::vector<float> buf;
    BBlock block;
    int64_t first = 0;
    if (!b.trans && k <= DirectDepth()) {
      block.direct = b.p + pc * b.ld + jc;
      block.ld = b.ld;
      first = nc / kNr * kNr;
    }
    if (first < nc) {
      float* bp = Buffer(buf, static_cast<size_t>(kc * ((nc - first + kNr - 1) / kNr * kNr)));
      PackB(b, pc, kc, jc + first, nc - first, bp);
      block.packed = bp;
    }
    return block;
  }
};

struct PackOnTheFlyA {
  Operand a;
  PORTTOOL_ALWAYS_INLINE const float* operator()(int64_t ic, int64_t mc, int64_t pc,
                                                 int64_t kc) const {
    thread_local std::vector<float> buf;
    float* ap = Buffer(buf, static_cast<size_t>((mc + kMr - 1) / kMr * kMr * kc));
    PackA(a, ic, mc, pc, kc, ap);
    return ap;
  }
};

}  // namespace

int64_t SgemmTileWidth() {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  if (HasAvx512()) return 2 * kNr;
#endif
  return kNr;
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  GemmLoop(m, n, k, alpha, beta, c, ldc, PackOnTheFlyA{{a, lda, trans_a}},
           PackOnTheFlyB{{b, ldb, trans_b}, k});
}

PackedA PackMatrixA(bool trans, int64_t m, int64_t k, const float* a, int64_t lda) {
  PackedA packed;
  packed.m = m;
  packed.k = k;
  const int64_t panels = (m + kMr - 1) / kMr;
  const int64_t blocks = (k + kKc - 1) / kKc;
  packed.data.resize(static_cast<size_t>(std::max<int64_t>(1, blocks * panels * kKc * kMr)));
  const Operand A{a, lda, trans};
  for (int64_t q = 0; q < blocks; ++q) {
    const int64_t pc = q * kKc, kc = std::min(kKc, k - pc);
    PackA(A, 0, m, pc, kc, packed.data.data() + q * panels * kKc * kMr);
  }
  return packed;
}

namespace {

// A PackedA's blocks for rows from row0, and a PackedB's for columns from col0.
struct PackedABlocks {
  const PackedA& a;
  int64_t row0;
  PORTTOOL_ALWAYS_INLINE const float* operator()(int64_t ic, int64_t, int64_t pc,
                                                 int64_t kc) const {
    const int64_t panels = (a.m + kMr - 1) / kMr;
    return a.data.data() + (pc / kKc) * panels * kKc * kMr + (row0 + ic) / kMr * kc * kMr;
  }
};
struct PackedBBlocks {
  const PackedB& b;
  int64_t col0;
  PORTTOOL_ALWAYS_INLINE BBlock operator()(int64_t pc, int64_t kc, int64_t jc, int64_t) const {
    const int64_t panels = (b.n + kNr - 1) / kNr;
    return BBlock{b.data.data() + (pc / kKc) * panels * kKc * kNr + (col0 + jc) / kNr * kc * kNr};
  }
};

}  // namespace

void SgemmPacked(const PackedA& a, int64_t row0, int64_t rows, bool trans_b, int64_t n,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  GemmLoop(rows, n, a.k, 1.f, beta, c, ldc, PackedABlocks{a, row0},
           PackOnTheFlyB{{b, ldb, trans_b}, a.k});
}

void SgemmPackedAB(const PackedA& a, int64_t row0, int64_t rows, const PackedB& b, int64_t col0,
                   int64_t cols, float beta, float* c, int64_t ldc) {
  GemmLoop(rows, cols, a.k, 1.f, beta, c, ldc, PackedABlocks{a, row0}, PackedBBlocks{b, col0});
}

PackedB PackMatrixB(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb) {
  PackedB packed;
  packed.k = k;
  packed.n = n;
  const int64_t panels = (n + kNr - 1) / kNr;
  const int64_t blocks = (k + kKc - 1) / kKc;
  packed.data.resize(static_cast<size_t>(std::max<int64_t>(1, blocks * panels * kKc * kNr)));
  const Operand B{b, ldb, trans};
  for (int64_t q = 0; q < blocks; ++q) {
    const int64_t pc = q * kKc, kc = std::min(kKc, k - pc);
    PackB(B, pc, kc, 0, n, packed.data.data() + q * panels * kKc * kNr);
  }
  return packed;
}

void SgemmPackedB(bool trans_a, int64_t m, int64_t col0, int64_t cols, const float* a, int64_t lda,
                  const PackedB& b, float beta, float* c, int64_t ldc) {
  GemmLoop(m, cols, b.k, 1.f, beta, c, ldc, PackOnTheFlyA{{a, lda, trans_a}},
           PackedBBlocks{b, col0});
}

}  // namespace porttool::runtime::kernels
