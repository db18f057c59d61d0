#include "lib/runtime/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "lib/ir/dtype.h"
#include "lib/runtime/execution.h"
#include "lib/runtime/resource_accounting.h"
#include "lib/runtime/resource_limits.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {
namespace {

std::string ShapeText(int32_t dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}{}", ir::DtypeName(dtype), util::DimsToString(shape));
}

int64_t CountElements(int32_t dtype, const std::vector<int64_t>& shape) {
  // The message text only on failure: formatting it for every tensor was 5% of a run of small
  // nodes.
  if (auto count = util::CheckedElementCount(shape)) return *count;
  return util::ElementCountOf(shape, "tensor " + ShapeText(dtype, shape));
}

size_t ElementSize(int32_t dtype) {
  size_t size = ir::DtypeSize(dtype);
  if (size == 0) {
    ThrowBadInput("the executor cannot hold tensors of type {}", ir::DtypeName(dtype));
  }
  return size;
}

// Checks the limits before anything is allocated, so a model claiming terabytes costs nothing.
uint64_t ReserveStorage(int32_t dtype, const std::vector<int64_t>& shape) {
  // The shape text only on failure, as in CountElements: formatting it for every allocation was
  // 10% of a run of one-element nodes.
  const auto what = [&] { return "tensor " + ShapeText(dtype, shape); };
  const size_t element_size = ElementSize(dtype);
  const auto count = util::CheckedElementCount(shape);
  const auto checked =
      count ? util::CheckedMul(*count, static_cast<int64_t>(element_size)) : std::nullopt;
  const uint64_t bytes =
      checked ? static_cast<uint64_t>(*checked) : util::ByteSizeOf(shape, element_size, what());
  // aligned_alloc needs a multiple of the alignment; never zero so data_ is valid.
  const uint64_t padded = std::max<uint64_t>(
      (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment, kTensorAlignment);
  const ResourceLimits limits = GetResourceLimits();
  if (bytes > limits.tensor_bytes) {
    ThrowBadInput("{} needs {}, over the per-tensor memory limit of {}", what(),
                  util::FormatBytes(bytes), util::FormatBytes(limits.tensor_bytes));
  }
  if (!ReserveTensorBytes(padded)) {
    ThrowBadInput("{} needs {} with {} already in use, over the total tensor memory limit of {}",
                  what(), util::FormatBytes(bytes), util::FormatBytes(LiveTensorBytes()),
                  util::FormatBytes(limits.total_bytes));
  }
  return padded;
}

// The caller's buffer when the allocation of `bytes` of `dtype` is the one it was opened for.
void* TakeOutputBuffer(int32_t dtype, uint64_t bytes) {
  ScopedExecution* scope = CurrentScope();
  if (scope == nullptr) return nullptr;
  PendingOutput& p = scope->pending_output();
  if (!p.active || (p.dtype != 0 && p.dtype != dtype) || bytes > p.capacity ||
      (p.bytes != 0 && bytes != p.bytes)) {
    return nullptr;
  }
  p.active = false;
  return p.data;
}

}  // namespace

ScopedOutputBuffer::ScopedOutputBuffer(int32_t dtype, size_t bytes, OutputBuffer buffer)
    : scope_(CurrentScope()) {
  if (scope_ == nullptr) ThrowInternal("an output buffer is bound outside a Session run");
  // Kernels may rely on the Tensor invariant of 64-byte alignment; other buffers get a copy.
  const bool aligned = reinterpret_cast<uintptr_t>(buffer.data) % kTensorAlignment == 0;
  scope_->pending_output() = {dtype, bytes, buffer.data, buffer.capacity,
                              buffer.data != nullptr && aligned};
}

ScopedOutputBuffer::~ScopedOutputBuffer() { scope_->pending_output().active = false; }

namespace {

// What Tensor::Uninitialized storage holds: nothing written, or 0xFF bytes when the run's
// ExecutionEnv asks for poison (test runs).
void FillUnwritten(void* p, uint64_t bytes) {
  if (CurrentExecution().poison_uninitialized) std::memset(p, 0xFF, bytes);
}

}  // namespace

Tensor::Tensor(int32_t dtype, std::vector<int64_t> shape)
    : Tensor(dtype, std::move(shape), Fill::kZero) {}

Tensor Tensor::Uninitialized(int32_t dtype, std::vector<int64_t> shape) {
  return Tensor(dtype, std::move(shape), Fill::kNone);
}

Tensor::Tensor(int32_t dtype, std::vector<int64_t> shape, Fill fill)
    : dtype_(dtype), shape_(std::move(shape)), size_(CountElements(dtype, shape_)) {
  const uint64_t bytes = static_cast<uint64_t>(size_) * ElementSize(dtype);
  auto clear = [fill](void* p, uint64_t n) {
    if (fill == Fill::kZero) {
      std::memset(p, 0, n);
    } else {
      FillUnwritten(p, n);
    }
  };
  if (void* caller = TakeOutputBuffer(dtype, bytes)) {
    clear(caller, bytes);
    storage_ = std::shared_ptr<const void>(caller, [](const void*) {});  // the caller frees it
    data_ = caller;
    return;
  }
  const uint64_t padded = ReserveStorage(dtype, shape_);
  // Plain malloc, aligned by hand, rather than aligned_alloc: glibc (2.36) serves memalign with a
  // chunk a little larger than the request and splits it, so a freed tensor's chunk is always
  // too small for the next tensor of the same size, and the heap grows by one tensor per step
  // wherever freed blocks are not merged (measured: a 48-step chain of 8 MB tensors run in two
  // threads, as `compare --per-tensor` does, grew to 290 MB while 57 MB were live).
  void* block = std::malloc(padded + kTensorAlignment);
  if (block == nullptr) {
    ReleaseTensorBytes(padded);
    ThrowBadInput("out of memory allocating {} for tensor {}", util::FormatBytes(padded),
                  ShapeText(dtype, shape_));
  }
  auto address = reinterpret_cast<uintptr_t>(block);
  void* p = reinterpret_cast<void*>((address + kTensorAlignment - 1) & ~(kTensorAlignment - 1));
  clear(p, padded);
  storage_ = std::shared_ptr<const void>(p, [padded, block](const void*) {
    std::free(block);
    ReleaseTensorBytes(padded);
  });
  data_ = p;
}

Tensor Tensor::View(int32_t dtype, std::vector<int64_t> shape, const void* data,
                    std::shared_ptr<const void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = CountElements(dtype, t.shape_);
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
  auto count = util::CheckedElementCount(shape);
  if (count != size_) {
    ThrowInternal("cannot reshape {} to {}", DebugString(), util::DimsToString(shape));
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
