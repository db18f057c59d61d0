// The C header firmware includes to run a model without a heap: for every graph input and output
// its element type (C type and ONNX name), rank, dims, element count, byte size and aligned byte
// size; optionally the static arena plan (memory_plan.h) and the weight blob layout (weights.h).
// Everything is a macro, so the header is valid C99 and C++ alike, usable in `#if` and
// `_Static_assert`, and costs nothing when unused. Names are sanitised through one CNameTable so
// every tensor has exactly one identifier across all sections.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/analysis/memory_plan.h"
#include "lib/emit/c_names.h"
#include "lib/emit/weights.h"
#include "lib/io/model.h"

namespace porttool::emit {

// A graph input or output buffer.
struct BufferInfo {
  std::string name;
  std::string c_name;
  bool is_input = false;
  int index = 0;  // position among the graph's inputs (without initializers) or outputs
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  uint64_t aligned_bytes = 0;
};

// The real graph inputs, then the outputs, with static sizes (c_name left empty). Throws
// Error(kBadInput) naming a buffer whose shape or type is not static.
std::vector<BufferInfo> GraphBuffers(const io::Model& model, uint64_t alignment);

struct HeaderOptions {
  uint64_t alignment = 64;
  std::string prefix;        // macro prefix; a C identifier (upper-cased in macros)
  std::string model_file;    // shown in the leading comment
  std::string model_sha256;  // likewise
  std::string command_line;  // likewise
  const analysis::MemoryPlan* arena = nullptr;   // adds the arena section
  const analysis::Liveness* liveness = nullptr;  // types of the arena tensors (with `arena`)
  const WeightsLayout* weights = nullptr;        // adds the weights section
  std::string weights_array;  // when weights go to C source: the array the header declares
};

struct Header {
  std::string text;
  std::vector<BufferInfo> buffers;             // with c_name filled in
  std::map<std::string, std::string> c_names;  // every tensor named in the header
  std::vector<CNameCollision> collisions;
};

// Renders the header. Throws Error(kUsage) when `prefix` is not a C identifier.
Header RenderHeader(const io::Model& model, const HeaderOptions& options);

// Default macro prefix: the model file's stem as an upper-case identifier ("DEMO_DETECTOR").
std::string DefaultPrefix(const std::filesystem::path& model_path);

}  // namespace porttool::emit
