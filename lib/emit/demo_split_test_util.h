// For the emit tests: the demo detector split around its GELU, written to a folder (three
// segments, three bridges), the input of emit-runner and of the pipeline.json loader.
#pragma once

#include <filesystem>

#include "lib/emit/split_writer.h"
#include "lib/io/model.h"
#include "lib/ir/split.h"
#include "lib/shape/infer.h"
#include "lib/util/testing.h"

namespace porttool::testing {

// Writes the split to `dir`; returns its pipeline.json.
inline std::filesystem::path WriteDemoSplit(const std::filesystem::path& dir) {
  io::Model model = io::Load(TestData("demo_detector.onnx"));
  shape::ApplyInputShapes(model, {{"images", {1, 3, 64, 64}}});
  ir::SplitOptions options;
  options.infer_types = shape::TypeInference();
  auto split = ir::SplitAtNodes(model, {"Custom_GELU_0"}, options);
  emit::WriteSplit(split, model, dir);
  return dir / "pipeline.json";
}

}  // namespace porttool::testing
