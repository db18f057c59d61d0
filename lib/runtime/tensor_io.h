// Moving tensors in and out of the executor: ONNX TensorProto (initializers, Constant values, the
// backend-test .pb files) and NumPy .npy files (what users have at hand).
//
// Design decision on float16: the executor computes in float32. float16 data (initializers,
// inputs, .npy '<f2') is widened to float32 on load, and Cast(to=FLOAT16) rounds to half
// precision but keeps float32 storage; outputs are therefore float32 even where the model declares
// float16. One float path keeps every kernel simple and is exact for everything fp16 can hold.
// bfloat16 is the upper half of a float32, so it takes the same path: widened on load (exact),
// and Cast(to=BFLOAT16) drops the low 16 bits. A float16 device's arithmetic (every float tensor
// rounded to float16 between ops) is a session option on top of this path (SessionOptions::
// float16, float16.h; `run`/`compare --precision fp16`).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even
// Rounds a float to the nearest value float16 can represent (keeping it a float).
inline float RoundToHalf(float f) { return HalfToFloat(FloatToHalf(f)); }
float BFloat16ToFloat(uint16_t b);
// The nearest bfloat16 toward zero (the low 16 bits dropped), kept a float; NaN stays NaN. ONNX
// leaves Cast's bfloat16 rounding unspecified before opset 19, and its reference implementation
// (the backend tests' expected outputs) truncates, as TensorFlow's first bfloat16 did.
float TruncateToBFloat16(float f);

// A tensor's value. Raw, typed-field and external data are all accepted; external data that is
// suitably aligned becomes a zero-copy read-only view of the mapped file. float16 and bfloat16
// become float32.
// Throws Error(kBadInput) naming the tensor for string tensors, unknown types or a payload whose
// size disagrees with the dims.
Tensor TensorFromProto(const io::Model& model, const onnx::TensorProto& proto);
// For protos that cannot reference external data (a standalone .pb file).
Tensor TensorFromProto(const onnx::TensorProto& proto);

// A TensorProto with raw_data.
onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name);

// .npy (format 1.0-3.0, C order, little-endian). Types: f2 (read as float32), f4, f8, i1, u1,
// i2, u2, i4, u4, i8, u8, b1. Anything else, Fortran order or big-endian data is an
// Error(kBadInput) naming the file and what to do.
Tensor ReadNpy(const std::filesystem::path& path);
// Written atomically.
void WriteNpy(const std::filesystem::path& path, const Tensor& tensor);

// Writes one .npy (or .pb) file per tensor into `dir` (created when missing), named by
// TensorFileNames, all or none: Error(kBadInput) naming the directory or file when it cannot be
// created or written, and then no file appears. Returns the paths in order.
std::vector<std::filesystem::path> WriteTensorFiles(const std::filesystem::path& dir,
                                                    const std::vector<std::string>& names,
                                                    const std::vector<const Tensor*>& tensors,
                                                    bool pb);

// A serialized onnx.TensorProto (the backend-test format). `name` receives the stored name.
Tensor ReadPb(const std::filesystem::path& path, std::string* name = nullptr);
void WritePb(const std::filesystem::path& path, const Tensor& tensor, const std::string& name);

// By extension: .npy or .pb. Throws Error(kUsage) for anything else.
Tensor ReadTensorFile(const std::filesystem::path& path);

// File names for tensors: characters outside [A-Za-z0-9._-] become '_', a leading '.' too (no
// hidden files, no '..'), names that collide after that get "_2", "_3"... `extension` includes
// the dot.
std::vector<std::string> TensorFileNames(const std::vector<std::string>& tensor_names,
                                         const std::string& extension);

}  // namespace porttool::runtime
