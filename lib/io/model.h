// The in-memory model every stage works on: the ModelProto as loaded (never converted to another
// IR, which would lose fields) plus where it came from, so external weights can be resolved and
// mapped lazily. Load validates structure and every external-data location up front; values are
// read only when a stage asks for them (TensorBytes).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "lib/io/external_data.h"
#include "lib/io/mapped_file.h"
#include "lib/util/error.h"

namespace porttool::io {

class OutputSet;  // lib/io/atomic_file.h

struct Model {
  onnx::ModelProto proto;
  std::filesystem::path path;      // file it was loaded from; empty for in-memory models
  std::filesystem::path base_dir;  // directory that external-data locations are relative to
  // Memory maps of external data files, shared by copies of the model.
  struct MapCache {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<const MappedFile>> files;
  };
  std::shared_ptr<MapCache> maps = std::make_shared<MapCache>();
};

// Loads an ONNX file. Throws Error(kBadInput) with a one-line cause for anything unreadable:
// missing, a directory, empty, not protobuf, truncated, no graph, over protobuf's 2 GB limit,
// or an unsafe/out-of-range external-data reference.
Model Load(const std::filesystem::path& path);

// No target holds a tensor of 1 TiB; a shape claiming that much (or one whose element count
// overflows int64) is an attack or a corrupt file, refused before any stage plans memory for it.
inline constexpr uint64_t kMaxClaimedTensorBytes = uint64_t{1} << 40;
// The one nesting limit: If/Loop/Scan bodies and model-local function calls (lib/io/functions.h)
// nest at most this deep, a body or a call counting one level. Every recursive walk in lib/
// recurses once per level (none per node), so this bounds their stack whatever the model holds;
// protobuf's own parser stops near 32 levels, and real models nest a few.
inline constexpr int kMaxSubgraphDepth = 16;

// Throws Error(kBadInput) naming `where` and the tensor when a static shape in `graph` (inputs,
// outputs, value_info, initializer dims, recursively in subgraphs) has a negative dim, an element
// count past int64 or kMaxClaimedTensorBytes or more, or when subgraphs nest past
// kMaxSubgraphDepth. Load calls it; shape inference calls it on what it inferred.
// The error is a ResourceClaimError, so stages that turn other errors into findings (check's
// strict inference) still refuse such a model as bad input.
void CheckClaimedSizes(const onnx::GraphProto& graph, const std::string& where);
class ResourceClaimError : public Error {
 public:
  using Error::Error;
};

// Parses ONNX text syntax (onnx::OnnxParser), for tests and small fixtures.
Model ParseText(const std::string& text);

// Bytes of a tensor's data in ONNX's little-endian raw layout, wherever they live: raw_data,
// the typed repeated fields (converted), or a mapped external file region. `keepalive` owns
// whatever backs `bytes`. String tensors are rejected with Error(kBadInput).
struct TensorBytes {
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> keepalive;
};
TensorBytes ReadTensorBytes(const Model& model, const onnx::TensorProto& tensor);

// Payload size in bytes without reading anything (external: the reference's length).
uint64_t TensorPayloadBytes(const onnx::TensorProto& tensor);

// Calls `fn` on every TensorProto holding weights: initializers and Constant-node `value`
// attributes, in the main graph and in every subgraph, recursively.
void ForEachTensor(onnx::GraphProto& graph, const std::function<void(onnx::TensorProto&)>& fn);
void ForEachTensor(const onnx::GraphProto& graph,
                   const std::function<void(const onnx::TensorProto&)>& fn);

struct SaveOptions {
  // Write every tensor of at least `external_threshold` bytes (and every tensor that is already
  // external) into one data file next to the output, named `external_file` (default:
  // "<output file name>.data").
  bool external_data = false;
  std::string external_file;
  uint64_t external_threshold = 1024;
  // Allow the output to be the very file the model was loaded from.
  bool in_place = false;
};

// The files `model` was read from: the model file and every external data file it references.
std::vector<std::filesystem::path> ReferencedFiles(const Model& model);
// The referenced file that `out` is (same file, through any path or hard link), if any: writing
// there would overwrite the input. nullopt for a model not loaded from disk.
std::optional<std::filesystem::path> InputFileAt(const Model& model,
                                                 const std::filesystem::path& out);

// Protobuf cannot serialize a message of 2 GB or more.
inline constexpr uint64_t kProtobufLimit = (uint64_t{1} << 31) - 1;

// Saves atomically (temp file + rename; nothing left behind on failure). The model file and the
// data files it writes or links (below) are committed together: all of them or none. Tensors that
// stay external keep pointing at the same bytes: when the output directory differs from the
// model's, the data file is hard-linked there (copied, with a warning in `notes`, across file
// systems).
// An inline save of 2 GB or more is refused with Error(kUsage) naming --external-data.
// `model` is temporarily modified while writing and restored before returning.
struct SaveResult {
  std::vector<std::string> notes;            // warnings worth showing the user
  std::vector<std::filesystem::path> files;  // every file written or linked
};
SaveResult Save(Model& model, const std::filesystem::path& out, const SaveOptions& options = {});
// The same, leaving every file written but uncommitted in `outputs`, for a command that writes
// other files with the model and commits them all at once (OutputSet::Commit).
SaveResult Save(Model& model, const std::filesystem::path& out, const SaveOptions& options,
                OutputSet& outputs);

// Makes `location` (relative to `from_dir`) reachable under `to_dir` with the same relative path:
// hard link when possible, else a copy, added to `outputs` (nothing when it is already there).
// Returns true when it had to copy.
bool LinkOrCopyDataFile(const std::filesystem::path& from_dir, const std::string& location,
                        const std::filesystem::path& to_dir, OutputSet& outputs);

}  // namespace porttool::io
