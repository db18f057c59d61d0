// ScaffoldStage and KitStage: `porttool scaffold-op` and `porttool kit` as calls. Both pin the
// input shapes first (on a copy) so the op description and the kits see the shapes the model
// will be deployed with; the package and the kits are written by lib/emit/scaffold_op.h and
// lib/emit/kit.h. KitStage also reads a kit's real input samples from a directory.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lib/emit/kit.h"
#include "lib/emit/scaffold_op.h"
#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::stages {

struct ScaffoldStageOptions {
  shape::InputShapes input_shapes;
  emit::ScaffoldOptions scaffold;
  std::filesystem::path out_dir;
};

emit::ScaffoldResult ScaffoldStage(const io::Model& model, const ScaffoldStageOptions& options);

struct KitStageOptions {
  shape::InputShapes input_shapes;
  emit::KitOptions kit;
  std::filesystem::path samples_dir;  // empty: random inputs (kit.seed)
  std::filesystem::path out_dir;
  // Replace an existing `out_dir` (io::CheckOutputDir's rule: only one porttool wrote).
  bool replace = false;
  // Inputs besides the model, its data files and the samples, which `out_dir` must not hold.
  std::vector<std::filesystem::path> other_inputs{};
};

// The kits are built beside `out_dir` and renamed into place once (all of them or none), under
// io::CheckOutputDir's rule for an existing `out_dir`.
std::vector<emit::KitSummary> KitStage(const io::Model& model, const KitStageOptions& options);

// A kit's real inputs: every .npy/.pb file of `dir` is one sample of a single-input model; for
// several inputs, every sub-directory is one sample holding <input name>.npy or .pb per input.
// Error(kBadInput) naming the directory when it holds no sample.
std::vector<runtime::TensorMap> ReadKitSamples(const std::filesystem::path& dir,
                                               const io::Model& model);

}  // namespace porttool::stages
