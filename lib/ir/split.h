// Split: cut a model into a chain of segments so that the nodes a target cannot run execute on
// the host CPU and everything between them on the accelerator. The caller marks nodes as `host`
// (`split --at` marks named nodes; `split --auto --target` marks what the target lacks); the
// segments are the maximal runs of equal role in topological order. Every tensor that crosses a
// segment boundary (skip connections and early graph outputs included) becomes a bridge: an
// output of its producing segment and an input of every consuming one. Segments keep the source's
// opsets, IR version and producer, carry only the initializers they read, have types for all
// their inputs and outputs (inferred, by the function the caller hands in, when the source lacked
// them), and refer to external weights by the original location/offset/length so that writing
// them copies no weight bytes. The same sub-model builder serves `extract` (lib/ir/extract.h).
// Advice on cheaper cut points is an analysis (lib/analysis/cut_advice.h); the CLI prints the
// table; lib/emit/split_writer.h writes the segment directory and pipeline.json.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"

namespace porttool::ir {

// Completes the tensor types of a model in place: shape inference, which lives above lib/ir
// (lib/shape). Sub-model builders call it, at most once and on a copy, when a boundary tensor has
// no static type; callers hand in shape::TypeInference() (lib/shape/infer.h). Empty: only the
// types the model records are used. An Error it throws is tolerated (those types stay unknown).
using TypeInferenceFn = std::function<void(io::Model&)>;

enum class SegmentRole { kAccelerator, kHost };
// "accelerator" or "host", the names pipeline.json uses.
const char* RoleName(SegmentRole role);

// One input or output of a segment with the type it was given.
struct BoundaryTensor {
  std::string name;
  onnx::TypeProto type;           // may lack a shape (or be empty) when inference could not tell
  std::optional<uint64_t> bytes;  // when the shape is static and the dtype has a fixed size
};

struct Segment {
  SegmentRole role = SegmentRole::kAccelerator;
  std::vector<int> nodes;  // indices into the source graph, in execution order
  std::vector<BoundaryTensor> inputs;
  std::vector<BoundaryTensor> outputs;
  io::Model model;   // the segment as a model; base_dir is the source's (external data resolves)
  std::string file;  // file name inside the output directory, e.g. "01_host.onnx"
};

// A tensor produced in one segment and read by later ones.
struct Bridge {
  std::string tensor;
  int producer = -1;           // segment index
  std::vector<int> consumers;  // segment indices, ascending
  std::optional<uint64_t> bytes;
};

// Moving a segment boundary `nodes_moved` nodes into the accelerator segment (so the host runs
// those nodes too) would bridge `bytes` instead.
struct CutCandidate {
  std::string before_node;  // the boundary would sit just before this node
  int nodes_moved = 0;
  uint64_t bytes = 0;
  std::vector<std::string> tensors;  // what would cross there
};

// A boundary whose bridge is over the warning threshold, with smaller cuts nearby
// (analysis::AdviseCuts computes it; the split keeps it to write pipeline.json).
struct CutAdvice {
  int boundary = 0;                        // between segment `boundary - 1` and segment `boundary`
  std::vector<std::string> large_bridges;  // bridges over the threshold crossing it
  uint64_t bytes = 0;                      // everything crossing this boundary
  std::vector<CutCandidate> candidates;    // smallest first, at most 3
  std::string message;                     // one-line warning for the log
};

// Input shapes are pinned by the caller (shape::ApplyInputShapes) before splitting.
struct SplitOptions {
  TypeInferenceFn infer_types;  // completes boundary types the model lacks
};

struct SplitResult {
  std::vector<Segment> segments;             // execution order
  std::vector<Bridge> bridges;               // in production order
  std::vector<CutAdvice> advice;             // filled by the caller (analysis::AdviseCuts)
  std::map<std::string, int> graph_outputs;  // original graph output -> producing segment
  std::vector<std::string> notes;            // warnings worth showing (e.g. untyped tensors)
  int source_nodes = 0;
};

// Splits at the nodes named by the user (`--at`): each becomes (part of) a host segment.
// Throws Error(kUsage) for an unknown name (listing the closest node names), an ambiguous name,
// a name that is a graph input, initializer or tensor rather than a node, or a node inside a
// subgraph (naming its parent node, which can be cut instead).
SplitResult SplitAtNodes(const io::Model& model, const std::vector<std::string>& node_names,
                         const SplitOptions& options = {});

// The general form: `host[i]` marks node i of the main graph as host. `--auto --target` calls
// this with the nodes the target's accelerator cannot run.
SplitResult SplitModel(const io::Model& model, const std::vector<bool>& host,
                       const SplitOptions& options = {});

// Resolves --at names to node indices (the checks listed at SplitAtNodes).
std::vector<int> ResolveCutNodes(const GraphView& view, const std::vector<std::string>& names);

// ---- Shared with extract ----

// Types of tensors for sub-model boundaries: the source's value_info, graph inputs/outputs and
// initializers, completed by `infer` on a copy of the model when the source lacks a (static)
// shape. Inference runs at most once, on first need; without `infer` the known types are final.
class TensorTypes {
 public:
  TensorTypes(const io::Model& model, const GraphView& view, TypeInferenceFn infer = nullptr);
  ~TensorTypes();
  // The best known type; an empty TypeProto when nothing is known.
  onnx::TypeProto Find(const std::string& name);

 private:
  void InferOnce();
  const io::Model& model_;
  const GraphView& view_;
  TypeInferenceFn infer_;
  bool inferred_ = false;
  std::unique_ptr<io::Model> inferred_model_;
  std::unique_ptr<GraphView> inferred_view_;
};

// Which part of a graph becomes a sub-model.
struct SubModelSpec {
  std::vector<int> nodes;            // source node indices, in execution order
  std::vector<std::string> inputs;   // graph inputs of the sub-model
  std::vector<std::string> outputs;  // graph outputs of the sub-model
  std::string graph_name;
};

// Builds a model from `spec`: the nodes (copied), the initializers they read (external ones keep
// their reference), typed inputs and outputs, and the source's value_info for internal tensors.
// Throws Error(kBadInput) naming the node when a node reads a tensor that is neither an input,
// an initializer, nor produced inside. Untyped boundaries are reported in `notes`.
io::Model BuildSubModel(const io::Model& source, const GraphView& view, const SubModelSpec& spec,
                        TensorTypes& types, std::vector<std::string>* notes = nullptr);

// Byte size of a tensor type when its shape is static and its dtype has a fixed size.
std::optional<uint64_t> StaticBytes(const onnx::TypeProto& type);

}  // namespace porttool::ir
