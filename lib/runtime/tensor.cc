#include "lib/runtime/tensor.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "lib/ir/dtype.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

int64_t CountElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) ThrowInternal("tensor shape has a negative dim ({})", d);
    n *= d;
  }
  return n;
}

size_t ElementSize(int32_t dtype) {
  size_t size = ir::DtypeSize(dtype);
  if (size == 0) {
    ThrowBadInput("the executor cannot hold tensors of type {}", ir::DtypeName(dtype));
  }
  return size;
}

}  // namespace

Tensor::Tensor(int32_t dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(CountElements(shape_)) {
  size_t bytes = static_cast<size_t>(size_) * ElementSize(dtype);
  // aligned_alloc needs a size that is a multiple of the alignment; never zero so data_ is valid.
  size_t padded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (padded == 0) padded = kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, padded);
  if (p == nullptr) {
    ThrowBadInput("out of memory allocating {} bytes for a {} tensor", bytes, ir::DtypeName(dtype));
  }
  std::memset(p, 0, padded);
  storage_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  data_ = p;
}

Tensor Tensor::View(int32_t dtype, std::vector<int64_t> shape, const void* data,
                    std::shared_ptr<const void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = CountElements(t.shape_);
  ElementSize(dtype);
  t.storage_ = std::move(keepalive);
  t.data_ = const_cast<void*>(data);
  t.read_only_ = true;
  return t;
}

size_t Tensor::bytes() const {
  return empty() ? 0 : static_cast<size_t>(size_) * ir::DtypeSize(dtype_);
}

void* Tensor::mutable_raw() {
  if (read_only_) ThrowInternal("write to a read-only tensor view {}", DebugString());
  return data_;
}

Tensor Tensor::Reshaped(std::vector<int64_t> shape) const {
  if (CountElements(shape) != size_) {
    ThrowInternal("cannot reshape {} to {} elements", DebugString(), CountElements(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t(dtype_, shape_);
  if (bytes() > 0) std::memcpy(t.data_, data_, bytes());
  return t;
}

std::string Tensor::DebugString() const {
  std::string dims;
  for (size_t i = 0; i < shape_.size(); ++i) dims += (i ? "x" : "") + std::to_string(shape_[i]);
  return fmt::format("{}[{}]", empty() ? "empty" : ir::DtypeName(dtype_),
                     shape_.empty() ? "scalar" : dims);
}

void Tensor::CheckType(int32_t expected) const {
  if (expected != dtype_) {
    ThrowInternal("tensor {} accessed as {}", DebugString(), ir::DtypeName(expected));
  }
}

}  // namespace porttool::runtime
