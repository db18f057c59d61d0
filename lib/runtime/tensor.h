// Tensor: the executor's value type. Dense, row-major, contiguous storage aligned to 64 bytes
// (cache lines, AVX-512 loads, and what firmware DMA expects), or a read-only view of bytes
// owned elsewhere (a mapped external-data region, an initializer's raw_data).
// Element types are ONNX TensorProto data types (onnx::TensorProto::FLOAT, ...).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace porttool::runtime {

inline constexpr size_t kTensorAlignment = 64;

// Caller-owned memory a graph output may be produced in directly (the C API's output buffers).
struct OutputBuffer {
  void* data = nullptr;
  size_t capacity = 0;  // bytes
};

class ScopedExecution;

// While alive, and when the buffer is 64-byte aligned (the Tensor invariant kernels may rely on),
// the first tensor the running node allocates on this thread with `dtype` (0: any) and a size
// that fits the buffer (exactly `bytes` when non-zero) is placed in the buffer instead of on the
// heap, zeroed like any new tensor and outside the memory limits (the caller owns it). The
// binding lives in the run's ScopedExecution (lib/runtime/execution.h). The Session opens one
// around the kernel that produces an output the caller gave a buffer for, then checks where that
// output landed: a kernel may allocate a temporary first or return a view.
class ScopedOutputBuffer {
 public:
  ScopedOutputBuffer(int32_t dtype, size_t bytes, OutputBuffer buffer);
  ~ScopedOutputBuffer();
  ScopedOutputBuffer(const ScopedOutputBuffer&) = delete;
  ScopedOutputBuffer& operator=(const ScopedOutputBuffer&) = delete;

 private:
  ScopedExecution* scope_;
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialised, 64-byte-aligned storage for `shape`.
  Tensor(int32_t dtype, std::vector<int64_t> shape);
  // The same storage left unwritten, for kernels that write every element (elementwise, Conv,
  // Concat): zeroing each intermediate cost 10-12% of a PP-OCRv4 det run. When the run's
  // ExecutionEnv asks for poison it is filled with 0xFF bytes (NaN for floats), so a kernel that
  // reads before writing fails its tests (ctest runs the runtime suite that way).
  static Tensor Uninitialized(int32_t dtype, std::vector<int64_t> shape);
  // A read-only view of `data`, which `keepalive` keeps valid.
  static Tensor View(int32_t dtype, std::vector<int64_t> shape, const void* data,
                     std::shared_ptr<const void> keepalive);

  bool empty() const { return dtype_ == 0; }
  int32_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const { return shape_.at(axis); }
  int64_t size() const { return size_; }  // element count
  size_t bytes() const;
  bool read_only() const { return read_only_; }

  const void* raw() const { return data_; }
  void* mutable_raw();  // throws Error(kInternal) on a read-only view

  // Typed access; throws Error(kInternal) when T does not match dtype().
  template <typename T>
  const T* data() const {
    CheckType(TypeOf<T>());
    return static_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data() {
    CheckType(TypeOf<T>());
    return static_cast<T*>(mutable_raw());
  }

  // Same bytes, new shape (element count must match). Shares storage.
  Tensor Reshaped(std::vector<int64_t> shape) const;
  // A deep copy with its own writable storage.
  Tensor Clone() const;

  template <typename T>
  static int32_t TypeOf();

  std::string DebugString() const;  // "float32[1x3x64x64]"

 private:
  enum class Fill { kZero, kNone };
  Tensor(int32_t dtype, std::vector<int64_t> shape, Fill fill);
  void CheckType(int32_t expected) const;
  int32_t dtype_ = 0;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::shared_ptr<const void> storage_;
  void* data_ = nullptr;
  bool read_only_ = false;
};

template <>
inline int32_t Tensor::TypeOf<float>() {
  return onnx::TensorProto::FLOAT;
}
template <>
inline int32_t Tensor::TypeOf<double>() {
  return onnx::TensorProto::DOUBLE;
}
template <>
inline int32_t Tensor::TypeOf<int8_t>() {
  return onnx::TensorProto::INT8;
}
template <>
inline int32_t Tensor::TypeOf<uint8_t>() {
  return onnx::TensorProto::UINT8;
}
template <>
inline int32_t Tensor::TypeOf<int16_t>() {
  return onnx::TensorProto::INT16;
}
template <>
inline int32_t Tensor::TypeOf<uint16_t>() {
  return onnx::TensorProto::UINT16;
}
template <>
inline int32_t Tensor::TypeOf<int32_t>() {
  return onnx::TensorProto::INT32;
}
template <>
inline int32_t Tensor::TypeOf<uint32_t>() {
  return onnx::TensorProto::UINT32;
}
template <>
inline int32_t Tensor::TypeOf<int64_t>() {
  return onnx::TensorProto::INT64;
}
template <>
inline int32_t Tensor::TypeOf<uint64_t>() {
  return onnx::TensorProto::UINT64;
}
template <>
inline int32_t Tensor::TypeOf<bool>() {
  return onnx::TensorProto::BOOL;
}

}  // namespace porttool::runtime
