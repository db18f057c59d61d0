// SplitStage: `porttool split` as library calls. PlanSplit completes the model's shapes (the
// same completion emit-header and decide use, on a copy), cuts it at the named nodes or, given a
// target, at every run of nodes the target's accelerator cannot run (decide's scan and cost
// model), and adds the cut advice (lib/analysis/cut_advice.h). WriteSplit writes the segments
// and pipeline.json (lib/emit/split_writer.h). VerifySplit re-reads what was written and requires
// the chained segments to reproduce the model bit for bit on random inputs, and every segment
// to pass the ONNX checker. `port` calls the three parts with its own bundle directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/partition.h"
#include "lib/decide/target.h"
#include "lib/emit/split_writer.h"
#include "lib/io/model.h"
#include "lib/ir/split.h"
#include "lib/runtime/kernel.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"
#include "lib/util/error.h"

namespace porttool::stages {

struct SplitStageOptions {
  std::vector<std::string> at;                  // nodes to run on the host; or
  std::optional<decide::TargetProfile> target;  // cut where this target's accelerator cannot run
  decide::PartitionOptions partition;           // with a target
  shape::InputShapes input_shapes;
  uint64_t bridge_warn_bytes = uint64_t{1} << 20;
};

struct SplitPlan {
  io::Model model;  // the source with its shapes completed: what the segments were cut from
  ir::SplitResult split;
  std::optional<decide::Partition> partition;  // with a target
  std::vector<std::string> notes;              // shape completion, untyped tensors, cut advice
  // Segment inputs, outputs and bridges with no static byte size (pipeline.json would say
  // "bytes": null), and why: the inputs left dynamic, or the node that blocks their shapes.
  std::vector<std::string> unsized;
  std::string unsized_why;
};

// Error(kUsage) for unknown or ambiguous cut nodes (naming close matches).
SplitPlan PlanSplit(const io::Model& source, const SplitStageOptions& options);

struct SplitWriteOptions {
  bool copy_weights = false;
  std::string segment_dir{};  // see emit::WriteSplitOptions
  std::string source_name{};
  std::string source_sha256{};                  // see emit::WriteSplitOptions
  bool replace = false;                         // see emit::WriteSplitOptions
  std::vector<std::filesystem::path> inputs{};  // see emit::WriteSplitOptions
};

// Into `dir` atomically (an existing `dir` replaced only under io::CheckOutputDir's rule), or, with
// `into_existing`, into a directory the caller is already building (port's bundle).
emit::WriteSplitResult WriteSplit(SplitPlan& plan, const std::filesystem::path& dir,
                                  const SplitWriteOptions& options, bool into_existing = false);

struct SplitVerification {
  bool ran = false;         // false: it could not run (error says why; the split stays written)
  bool identical = false;   // the chained segments reproduce the model bit for bit
  bool checker_ok = false;  // every segment passes the ONNX checker
  size_t outputs = 0;
  std::vector<std::string> problems;
  std::string error;  // why it could not run
  ErrorKind error_kind = ErrorKind::kInternal;
  bool ok() const { return ran && identical && checker_ok; }
};

// What the ONNX checker finds in each segment (as written), one line each naming the segment's
// file: a segment a converter would reject is not a verified split, whatever the outputs say.
std::vector<std::string> SegmentCheckerFindings(const std::vector<io::Model>& segments,
                                                const SplitPlan& plan);

// Runs the pinned `source` and the segments as written under `dir` on the same random inputs.
SplitVerification VerifySplit(const io::Model& source, const shape::InputShapes& input_shapes,
                              const SplitPlan& plan, const std::filesystem::path& dir,
                              uint64_t seed, const runtime::KernelRegistry* kernels = nullptr,
                              const shape::InputRanges& ranges = {});

}  // namespace porttool::stages
