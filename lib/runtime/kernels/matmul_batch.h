// numpy.matmul batch broadcasting, shared by MatMul and the integer MatMul kernels
// (MatMulInteger, QLinearMatMul): the batch dims of A and B broadcast against each other, and
// every output batch maps back to one matrix of each operand. Private to lib/runtime/kernels.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <vector>

#include "lib/runtime/kernel.h"

namespace porttool::runtime::kernels {

// The broadcast of two batch shapes (the dims before the last two); fails naming the node when
// they are incompatible.
inline std::vector<int64_t> BroadcastBatch(const KernelContext& ctx, std::vector<int64_t> a,
                                           std::vector<int64_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1) {
      ctx.Fail(fmt::format("batch dims [{}] and [{}] cannot be broadcast together",
                           fmt::join(a, ","), fmt::join(b, ",")));
    }
    a[i] = a[i] == 1 ? b[i] : a[i];
  }
  return a;
}

// For every output batch (row-major over `out_batch`), the element offset of the operand's
// matrix when its matrices hold `matrix_size` elements; with matrix_size 1, the operand's batch
// index.
inline std::vector<int64_t> BatchOffsets(const std::vector<int64_t>& out_batch,
                                         const std::vector<int64_t>& batch, int64_t matrix_size) {
  const size_t rank = out_batch.size(), shift = rank - batch.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = matrix_size;
  for (size_t i = batch.size(); i-- > 0;) {
    strides[shift + i] = batch[i] == 1 ? 0 : stride;
    stride *= batch[i];
  }
  int64_t total = 1;
  for (int64_t d : out_batch) total *= d;
  std::vector<int64_t> offsets(total);
  std::vector<int64_t> index(rank, 0);
  for (int64_t b = 0; b < total; ++b) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i) off += index[i] * strides[i];
    offsets[b] = off;
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_batch[i]) break;
      index[i] = 0;
    }
  }
  return offsets;
}

}  // namespace porttool::runtime::kernels
