// Writes a split (lib/ir/split.h) to disk: one .onnx file per segment and DIR/pipeline.json, the
// manifest that `emit-runner` and the generated runner read back. It sits with the other outputs
// (headers, kits, runners) so that lib/ir stays free of file layouts and JSON.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/split.h"

namespace porttool::emit {

struct WriteSplitOptions {
  // Self-contained segments holding only their own weights: inline, or in a data file per
  // segment when a segment's weights exceed protobuf's 2 GB limit. Default: zero-copy.
  bool copy_weights = false;
  // Extra top-level pipeline.json fields (split --auto adds its cost estimate as "estimate").
  nlohmann::json annotations = nlohmann::json::object();
  // Segment files go into this sub-directory of the output (pipeline.json then names them
  // "<segment_dir>/<file>"); empty: beside pipeline.json.
  std::string segment_dir{};
  // What pipeline.json records as the source model's path; empty: the path it was loaded from.
  std::string source_name{};
  // The source file's SHA-256 when the caller already has it (port hashes it once at check);
  // empty: hashed here. Hashing a large model costs more than writing its segments.
  std::string source_sha256{};
  // Replace an existing output directory (io::CheckOutputDir's rule: only one porttool wrote).
  bool replace = false;
  // Inputs of the run besides the source model and its data files, which the output directory
  // must not hold (io::CheckOutputDir).
  std::vector<std::filesystem::path> inputs{};
};

struct WriteSplitResult {
  std::filesystem::path dir;
  std::vector<std::string> notes;  // e.g. a data file copied across file systems
  nlohmann::json manifest;         // what pipeline.json holds
};

// The default output directory for a model: "<model stem>.split" in the current directory.
std::filesystem::path DefaultSplitDir(const std::filesystem::path& model_path);

// Writes every segment and DIR/pipeline.json. The directory appears complete or not at all: it
// is built beside DIR and renamed into place; an existing DIR is replaced only under
// io::CheckOutputDir's rule (empty, or written by porttool and `replace` set, and holding no
// input). The source's data files are hard-linked, never
// rewritten; the manifest hashes the .onnx file only (weights are not read in zero-copy mode).
WriteSplitResult WriteSplit(ir::SplitResult& result, const io::Model& source,
                            const std::filesystem::path& dir,
                            const WriteSplitOptions& options = {});

// The same into `dir`, an existing directory the caller makes atomic (port's bundle). Segment
// file names in `result` gain the options' segment_dir.
WriteSplitResult WriteSplitFiles(ir::SplitResult& result, const io::Model& source,
                                 const std::filesystem::path& dir,
                                 const WriteSplitOptions& options = {});

// The pipeline.json document (see docs/cli/split.md): source, segments, bridges, outputs, advice,
// then `annotations`.
nlohmann::json PipelineManifest(const ir::SplitResult& result, const io::Model& source,
                                const std::string& source_sha256, const std::string& weights_mode,
                                const nlohmann::json& annotations = nlohmann::json::object(),
                                const std::string& source_name = "");

}  // namespace porttool::emit
