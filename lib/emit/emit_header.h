// `emit-header` as one library call: validates the request, plans the arena and the weight blob
// on a model whose shapes are already static (the CLI pins input shapes and runs shape inference
// first), renders the header and writes every output atomically. The CLI only parses options and
// prints the result.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/liveness.h"
#include "lib/analysis/memory_plan.h"
#include "lib/emit/header.h"
#include "lib/emit/weights.h"
#include "lib/io/model.h"

namespace porttool::emit {

inline constexpr uint64_t kMaxAlignment = 4096;

struct EmitRequest {
  std::filesystem::path header_path;
  std::filesystem::path weights_path;  // empty: no blob; ".c": C source; ".bin": raw
  uint64_t alignment = 64;
  std::string prefix;  // empty: DefaultPrefix(model.path)
  bool arena = false;
  analysis::LivenessOptions arena_options;
  std::string command_line;  // recorded in the header comment
};

struct EmitResult {
  Header header;
  std::optional<analysis::Liveness> liveness;  // with arena
  std::optional<analysis::MemoryPlan> arena;
  std::optional<WeightsLayout> weights;
  std::vector<std::filesystem::path> files;  // written
};

// Throws Error(kUsage) for a bad alignment (not a power of two in 1..4096), a bad prefix or
// weights extension, or an output that would overwrite the model; Error(kBadInput) for tensors
// without static shapes (naming them) and unreadable weights.
EmitResult EmitHeaderFiles(const io::Model& model, const EmitRequest& request);

// Throws Error(kUsage) unless `alignment` is a power of two from 1 to kMaxAlignment.
void CheckAlignment(uint64_t alignment);

}  // namespace porttool::emit
