// Winograd F(2x2, 3x3), see winograd.h. With d a 4x4 input tile, g a 3x3 filter and Y the 2x2
// output tile:  Y = A^T [ (G g G^T) . (B^T d B) ] A,  where . is the elementwise product and
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// Summed over input channels, the elementwise products become 16 GEMMs (one per tile position):
// M[t] (c_out x tiles) = U[t] (c_out x c_in) * V[t] (c_in x tiles). Tiles go 8 at a time along
// a tile row, as GCC vector lanes: the input transform reads each row's 18 columns with two
// contiguous loads and even/odd shuffles, and the output transform writes 16 contiguous columns.
#include "lib/runtime/kernels/winograd.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "lib/runtime/kernels/gemm.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"

namespace porttool::runtime::kernels {
namespace {

constexpr int kTilePositions = 16;
constexpr int64_t kLanes = 8;

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The geometry of one conv call, in tiles.
struct Tiling {
  int64_t tiles_h = 0, tiles_w = 0;
  int64_t row_tiles = 0;               // tiles_w rounded up to whole groups of 8
  int64_t padded_h = 0, padded_w = 0;  // the zero-padded input plane
  int64_t rows_per_block = 1;
  int64_t block_tiles() const { return rows_per_block * row_tiles; }
};

Tiling MakeTiling(const WinogradConv& c) {
  Tiling t;
  t.tiles_h = (c.out_h + 1) / 2;
  t.tiles_w = (c.out_w + 1) / 2;
  t.row_tiles = RoundUp(t.tiles_w, kLanes);
  t.padded_h = 2 * t.tiles_h + 2;
  t.padded_w = 2 * t.row_tiles + 2;  // the last group reads up to column 2 * row_tiles + 1
  // About 256 tiles per GEMM: PP-OCRv4 det's 96->24 conv took 14.8 ms with 96, 13.7 ms with
  // 256 and 15.6 ms with 512 (small GEMMs pay OpenBLAS's per-call packing; big V leaves L2).
  t.rows_per_block = std::max<int64_t>(1, 256 / t.row_tiles);
  return t;
}

// The input of one image, zero-padded so that every tile (and every lane past the last tile)
// reads inside the buffer.
std::unique_ptr<float[]> PadImage(const WinogradConv& c, const Tiling& t, int64_t c_in,
                                  const float* x) {
  const int64_t plane = t.padded_h * t.padded_w;
  std::unique_ptr<float[]> padded(new float[c_in * plane]);
  ParallelRows(c_in, plane, [&](int64_t begin, int64_t end) {
    for (int64_t ci = begin; ci < end; ++ci) {
      float* dst = padded.get() + ci * plane;
      std::fill(dst, dst + plane, 0.f);
      const int64_t rows = std::min(c.in_h, t.padded_h - c.pad_top);
      const int64_t cols = std::min(c.in_w, t.padded_w - c.pad_left);
      for (int64_t r = std::max<int64_t>(0, -c.pad_top); r < rows; ++r) {
        const int64_t c0 = std::max<int64_t>(0, -c.pad_left);
        std::memcpy(dst + (r + c.pad_top) * t.padded_w + c0 + c.pad_left,
                    x + (ci * c.in_h + r) * c.in_w + c0, (cols - c0) * sizeof(float));
      }
    }
  });
  return padded;
}

PORTTOOL_ALWAYS_INLINE V8f Load8(const float* p) {
  V8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

PORTTOOL_ALWAYS_INLINE void Store8(float* p, V8f v) { std::memcpy(p, &v, sizeof v); }

// V[t][ci][j..j+8) for 8 tiles of one tile row whose top-left input is `in` (row stride `ld`).
PORTTOOL_ALWAYS_INLINE void TransformInputGroup(const float* in, int64_t ld, float* v,
                                                int64_t v_stride) {
  V8f d[4][4];  // d[row][col], each over the 8 tiles
  for (int r = 0; r < 4; ++r) {
    const float* p = in + r * ld;
    const V8f a = Load8(p), b = Load8(p + 8), c = Load8(p + 2), e = Load8(p + 10);
    d[r][0] = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    d[r][1] = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
    d[r][2] = __builtin_shufflevector(c, e, 0, 2, 4, 6, 8, 10, 12, 14);
    d[r][3] = __builtin_shufflevector(c, e, 1, 3, 5, 7, 9, 11, 13, 15);
  }
  for (int col = 0; col < 4; ++col) {  // B^T d: combine rows
    const V8f r0 = d[0][col] - d[2][col], r1 = d[1][col] + d[2][col];
    const V8f r2 = d[2][col] - d[1][col], r3 = d[1][col] - d[3][col];
    d[0][col] = r0, d[1][col] = r1, d[2][col] = r2, d[3][col] = r3;
  }
  for (int r = 0; r < 4; ++r) {  // (B^T d) B: combine columns
    const V8f* t = d[r];
    Store8(v + (r * 4 + 0) * v_stride, t[0] - t[2]);
    Store8(v + (r * 4 + 1) * v_stride, t[1] + t[2]);
    Store8(v + (r * 4 + 2) * v_stride, t[2] - t[1]);
    Store8(v + (r * 4 + 3) * v_stride, t[1] - t[3]);
  }
}

// Writes `n` (<= 16) floats of `lo` then `hi`.
PORTTOOL_ALWAYS_INLINE void StoreRow(float* out, int64_t n, V8f lo, V8f hi) {
  if (n >= 16) {
    Store8(out, lo);
    Store8(out + 8, hi);
    return;
  }
  float row[16];
  Store8(row, lo);
  Store8(row + 8, hi);
  std::memcpy(out, row, n * sizeof(float));
}

// The 2x2 outputs of 8 tiles from M[t][j..j+8) (stride m_stride between positions t), written at
// `out` (row stride ld): `cols` columns (<= 16) and `rows` rows (1 or 2) of them.
PORTTOOL_ALWAYS_INLINE void TransformOutputGroup(const float* m, int64_t m_stride, float bias,
                                                 float* out, int64_t ld, int64_t rows,
                                                 int64_t cols) {
  V8f s[2][4];  // A^T m: combine rows
  for (int col = 0; col < 4; ++col) {
    const V8f m0 = Load8(m + (0 + col) * m_stride), m1 = Load8(m + (4 + col) * m_stride);
    const V8f m2 = Load8(m + (8 + col) * m_stride), m3 = Load8(m + (12 + col) * m_stride);
    s[0][col] = m0 + m1 + m2;
    s[1][col] = m1 - m2 - m3;
  }
  for (int64_t r = 0; r < rows; ++r) {  // (A^T m) A: combine columns, interleave the 2 columns
    const V8f* t = s[r];
    const V8f y0 = t[0] + t[1] + t[2] + bias, y1 = t[1] - t[2] - t[3] + bias;
    StoreRow(out + r * ld, cols, __builtin_shufflevector(y0, y1, 0, 8, 1, 9, 2, 10, 3, 11),
             __builtin_shufflevector(y0, y1, 4, 12, 5, 13, 6, 14, 7, 15));
  }
}

struct Block {
  int64_t tile_row0 = 0, tile_rows = 0;
};

PORTTOOL_SIMD_CLONES void TransformInputBlock(const float* padded, const Tiling& t, int64_t c_in,
                                              const Block& b, float* v) {
  const int64_t nb = t.block_tiles(), plane = t.padded_h * t.padded_w;
  for (int64_t ci = 0; ci < c_in; ++ci) {
    for (int64_t tr = 0; tr < b.tile_rows; ++tr) {
      const float* row = padded + ci * plane + 2 * (b.tile_row0 + tr) * t.padded_w;
      for (int64_t j0 = 0; j0 < t.row_tiles; j0 += kLanes) {
        TransformInputGroup(row + 2 * j0, t.padded_w, v + ci * nb + tr * t.row_tiles + j0,
                            c_in * nb);
      }
    }
  }
}

PORTTOOL_SIMD_CLONES void TransformOutputBlock(const float* m, const Tiling& t,
                                               const WinogradConv& c, int64_t c_out, const Block& b,
                                               float* y) {
  const int64_t nb = t.block_tiles();
  for (int64_t co = 0; co < c_out; ++co) {
    const float bias = c.bias ? c.bias[co] : 0.f;
    for (int64_t tr = 0; tr < b.tile_rows; ++tr) {
      const int64_t oy = 2 * (b.tile_row0 + tr);
      const int64_t rows = std::min<int64_t>(2, c.out_h - oy);
      for (int64_t j0 = 0; j0 < t.row_tiles && 2 * j0 < c.out_w; j0 += kLanes) {
        const int64_t cols = std::min<int64_t>(16, c.out_w - 2 * j0);
        TransformOutputGroup(m + co * nb + tr * t.row_tiles + j0, c_out * nb, bias,
                             y + (co * c.out_h + oy) * c.out_w + 2 * j0, c.out_w, rows, cols);
      }
    }
  }
}

void RunBlock(const float* padded, const Tiling& t, const WinogradConv& c, const WinogradWeights& w,
              const Block& b, float* y, float* v, float* m) {
  const int64_t nb = t.block_tiles(), tiles = b.tile_rows * t.row_tiles;  // the last block: fewer
  TransformInputBlock(padded, t, w.c_in, b, v);
  for (int pos = 0; pos < kTilePositions; ++pos) {
    Gemm(false, false, w.c_out, tiles, w.c_in, 1.f, w.u.data() + pos * w.c_out * w.c_in, w.c_in,
         v + pos * w.c_in * nb, nb, 0.f, m + pos * w.c_out * nb, nb);
  }
  TransformOutputBlock(m, t, c, w.c_out, b, y);
}

}  // namespace

WinogradWeights TransformWinogradWeights(const float* w, int64_t c_out, int64_t c_in) {
  WinogradWeights out{c_out, c_in, std::vector<float>(kTilePositions * c_out * c_in)};
  for (int64_t co = 0; co < c_out; ++co) {
    for (int64_t ci = 0; ci < c_in; ++ci) {
      const float* g = w + (co * c_in + ci) * 9;
      float gg[4][3];  // G g
      for (int k = 0; k < 3; ++k) {
        gg[0][k] = g[k];
        gg[1][k] = 0.5f * (g[k] + g[3 + k] + g[6 + k]);
        gg[2][k] = 0.5f * (g[k] - g[3 + k] + g[6 + k]);
        gg[3][k] = g[6 + k];
      }
      for (int r = 0; r < 4; ++r) {  // (G g) G^T
        const float u[4] = {gg[r][0], 0.5f * (gg[r][0] + gg[r][1] + gg[r][2]),
                            0.5f * (gg[r][0] - gg[r][1] + gg[r][2]), gg[r][2]};
        for (int col = 0; col < 4; ++col) {
          out.u[((r * 4 + col) * c_out + co) * c_in + ci] = u[col];
        }
      }
    }
  }
  return out;
}

bool WinogradPays(int64_t c_in, int64_t c_out, int64_t out_h, int64_t out_w) {
  // Below these the transforms and 16 small GEMMs cost more than they save (measured on
  // PP-OCRv4 det's 3x3 convs).
  return c_in >= 16 && c_out >= 16 && out_h * out_w >= 32 * 32;
}

void RunWinograd(const WinogradConv& c, const WinogradWeights& w) {
  const Tiling t = MakeTiling(c);
  const int64_t nb = t.block_tiles();
  const int64_t blocks = (t.tiles_h + t.rows_per_block - 1) / t.rows_per_block;
  for (int64_t n = 0; n < c.batch; ++n) {
    const auto padded = PadImage(c, t, w.c_in, c.x + n * w.c_in * c.in_h * c.in_w);
    float* y = c.y + n * w.c_out * c.out_h * c.out_w;
    ParallelMacs(blocks, kTilePositions * w.c_in * w.c_out * nb, [&](int64_t begin, int64_t end) {
      std::unique_ptr<float[]> v(new float[kTilePositions * w.c_in * nb]);
      std::unique_ptr<float[]> m(new float[kTilePositions * w.c_out * nb]);
      for (int64_t i = begin; i < end; ++i) {
        const Block b{i * t.rows_per_block,
                      std::min(t.rows_per_block, t.tiles_h - i * t.rows_per_block)};
        RunBlock(padded.get(), t, c, w, b, y, v.get(), m.get());
      }
    });
  }
}

}  // namespace porttool::runtime::kernels
