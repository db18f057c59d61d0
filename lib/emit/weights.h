// Weight blobs for firmware: every initializer of the main graph (and every Constant node's
// tensor value) packed into one blob, each tensor starting at an aligned offset, so firmware can
// point kernels straight into flash or into a memory-mapped file. The blob is written either raw
// (`.bin`, for a file system or a memory-mapped partition) or as a C source file holding one
// `const` aligned byte array (linked into flash). Tensor bytes are read through
// io::ReadTensorBytes, which maps external data, and streamed to the output file: a
// multi-gigabyte model is never held in memory, and raw bytes are not copied on the way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/io/atomic_file.h"
#include "lib/io/model.h"

namespace porttool::emit {

struct WeightEntry {
  std::string name;  // initializer name, or the Constant node's output name
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  uint64_t offset = 0;  // from the start of the blob; a multiple of the alignment
  uint64_t bytes = 0;
  const onnx::TensorProto* tensor = nullptr;  // points into the model's proto
};

struct WeightsLayout {
  uint64_t alignment = 1;
  uint64_t total_bytes = 0;          // blob size, a multiple of the alignment
  std::vector<WeightEntry> entries;  // initializers in file order, then Constant values
};

// Lays out the main graph's weights. Reads no tensor data. `alignment`: a power of two.
// Throws Error(kBadInput) naming the tensor for string tensors (no fixed-size layout).
WeightsLayout LayoutWeights(const io::Model& model, uint64_t alignment);

// Writes the blob raw, padding with zeros between tensors, into `file`; the caller commits it
// together with the header (all outputs or none).
void WriteWeightsBin(const io::Model& model, const WeightsLayout& layout, io::AtomicFile& file);

struct WeightsSourceOptions {
  std::string array_name;      // C identifier of the byte array
  std::string header_include;  // header to #include (declares the array and offset macros)
  std::string align_macro;     // the header's alignment macro, e.g. "DEMO_ALIGNED"
  std::string size_macro;      // the header's blob-size macro, e.g. "DEMO_WEIGHTS_SIZE"
  std::string model_file;      // for the leading comment
};

// Writes the blob as C source: `ALIGNED(A) const uint8_t NAME[SIZE] = { 0x.., ... };`, into
// `file` (committed by the caller).
void WriteWeightsSource(const io::Model& model, const WeightsLayout& layout,
                        const WeightsSourceOptions& options, io::AtomicFile& file);

}  // namespace porttool::emit
