// EmitHeaderStage: `porttool emit-header` as one call. It makes every shape static (the user's
// pins, then the shape completion of lib/runtime/shape_completion.h) and writes the header, the
// arena plan and the weight blob (lib/emit/emit_header.h). The model is completed on a copy.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/emit/emit_header.h"
#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::stages {

struct EmitHeaderStageOptions {
  shape::InputShapes input_shapes;
  emit::EmitRequest request;
};

struct EmitHeaderStageResult {
  emit::EmitResult emitted;
  std::vector<std::string> notes;  // shape completion, renamed identifiers
};

// Error(kUsage) when inputs stay dynamic (with an example pin), the emitter's errors otherwise.
EmitHeaderStageResult EmitHeaderStage(const io::Model& model,
                                      const EmitHeaderStageOptions& options);

// {"buffers", "arena"?, "weights"?, "renamed", "files"}: the `emit-header --json` shape.
nlohmann::json EmitHeaderJson(const emit::EmitResult& result);

}  // namespace porttool::stages
