#include "lib/stages/scaffold.h"

#include <algorithm>

#include "lib/io/input_file.h"
#include "lib/io/output_dir.h"
#include "lib/io/staging_dir.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace fs = std::filesystem;

emit::ScaffoldResult ScaffoldStage(const io::Model& model, const ScaffoldStageOptions& options) {
  io::Model pinned = model;
  if (!options.input_shapes.empty()) shape::ApplyInputShapes(pinned, options.input_shapes);
  // The package's test kit runs the kernel on the node's real tensors: with a dynamic input the
  // op description has no shapes and every kit test fails with "bad argument", so ask instead.
  if (auto dynamic = shape::DynamicInputDims(pinned); !dynamic.empty()) {
    ThrowUsage(
        "inputs with unknown dims: {}; the package's test kit needs the node's shapes: pin the "
        "input shape (e.g. {})",
        util::Join(dynamic, ", "), shape::ExampleInputShapes(pinned));
  }
  return emit::ScaffoldOp(pinned, options.scaffold, options.out_dir);
}

std::vector<emit::KitSummary> KitStage(const io::Model& model, const KitStageOptions& options) {
  io::OutputDirRequest request{options.out_dir, options.other_inputs, {}, options.replace};
  if (!model.path.empty()) {
    for (const auto& f : io::ReferencedFiles(model)) request.inputs.push_back(f);
  }
  if (!options.samples_dir.empty()) request.inputs.push_back(options.samples_dir);
  io::CheckOutputDir(request);
  io::Model pinned = model;
  if (!options.input_shapes.empty()) shape::ApplyInputShapes(pinned, options.input_shapes);
  emit::KitOptions kit = options.kit;
  if (!options.samples_dir.empty()) kit.samples = ReadKitSamples(options.samples_dir, pinned);
  io::StagingDir staging(options.out_dir, "kits");
  auto kits = emit::MakeKits(pinned, kit, staging.path());
  staging.Commit();
  return kits;
}

std::vector<runtime::TensorMap> ReadKitSamples(const fs::path& dir, const io::Model& model) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    ThrowBadInput(
        "kit samples '{}' is a file, not a directory: samples are a directory of "
        ".npy/.pb files (one per sample), or of one sub-directory per sample",
        dir.string());
  }
  if (!fs::is_directory(dir, ec)) ThrowBadInput("kit samples '{}' do not exist", dir.string());
  io::FolderListing listing = io::ListInputFolder(dir, "kit samples");
  // A name that says sample but is no regular file (a FIFO would block the read, a symlink loop
  // cannot be read) is refused rather than silently left out; other entries are not samples.
  for (const auto& skipped : listing.skipped) {
    if (skipped.path.extension() == ".npy" || skipped.path.extension() == ".pb") {
      ThrowBadInput("kit sample '{}' is not a regular file ({}); remove it from '{}'",
                    skipped.path.string(), skipped.why, dir.string());
    }
  }
  std::vector<std::string> inputs;
  for (const auto& in : model.proto.graph().input()) {
    bool init = false;
    for (const auto& i : model.proto.graph().initializer()) init |= i.name() == in.name();
    if (!init) inputs.push_back(in.name());
  }
  std::vector<runtime::TensorMap> samples;
  for (const auto& p : listing.folders) {
    runtime::TensorMap sample;
    for (const auto& name : inputs) {
      for (const char* ext : {".npy", ".pb"}) {
        // A non-regular file named like an input is read, and refused, by ReadTensorFile.
        if (fs::exists(p / (name + ext), ec))
          sample[name] = runtime::ReadTensorFile(p / (name + ext));
      }
    }
    samples.push_back(std::move(sample));
  }
  for (const auto& p : listing.files) {
    if ((p.extension() == ".npy" || p.extension() == ".pb") && inputs.size() == 1) {
      samples.push_back({{inputs[0], runtime::ReadTensorFile(p)}});
    }
  }
  if (samples.empty()) {
    ThrowBadInput(
        "kit samples {}: no samples (expected .npy/.pb files for a single-input model, or "
        "one sub-directory per sample with <input name>.npy)",
        dir.string());
  }
  return samples;
}

}  // namespace porttool::stages
