#include "lib/emit/split_writer.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "lib/io/atomic_file.h"
#include "lib/io/external_data.h"
#include "lib/io/output_dir.h"
#include "lib/io/staging_dir.h"
#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/sha256.h"

namespace porttool::emit {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Manifest
// ---------------------------------------------------------------------------------------------
namespace {

nlohmann::json ShapeJson(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return nullptr;
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) {
      dims.push_back(d.dim_value());
    } else if (d.has_dim_param()) {
      dims.push_back(d.dim_param());
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

nlohmann::json DtypeJson(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || type.tensor_type().elem_type() == 0) return nullptr;
  return ir::DtypeName(type.tensor_type().elem_type());
}

nlohmann::json OptionalBytes(const std::optional<uint64_t>& bytes) {
  return bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr);
}

nlohmann::json TensorJson(const ir::BoundaryTensor& t) {
  return {{"name", t.name},
          {"dtype", DtypeJson(t.type)},
          {"shape", ShapeJson(t.type)},
          {"bytes", OptionalBytes(t.bytes)}};
}

nlohmann::json TensorListJson(const std::vector<ir::BoundaryTensor>& tensors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tensors) out.push_back(TensorJson(t));
  return out;
}

}  // namespace

nlohmann::json PipelineManifest(const ir::SplitResult& result, const io::Model& source,
                                const std::string& source_sha256, const std::string& weights_mode,
                                const nlohmann::json& annotations, const std::string& source_name) {
  nlohmann::json doc;
  doc["format"] = "porttool-pipeline/1";
  doc["source"] = {{"path", source_name.empty() ? source.path.string() : source_name},
                   {"sha256", source_sha256},
                   {"nodes", result.source_nodes}};
  doc["weights"] = weights_mode;
  nlohmann::json segments = nlohmann::json::array();
  for (size_t s = 0; s < result.segments.size(); ++s) {
    const ir::Segment& seg = result.segments[s];
    nlohmann::json entry = {{"index", s},
                            {"file", seg.file},
                            {"role", ir::RoleName(seg.role)},
                            {"nodes", seg.model.proto.graph().node_size()},
                            {"inputs", TensorListJson(seg.inputs)},
                            {"outputs", TensorListJson(seg.outputs)}};
    if (seg.role == ir::SegmentRole::kHost) {
      nlohmann::json names = nlohmann::json::array();
      for (int i : seg.nodes) names.push_back(ir::NodeLabel(source.proto.graph().node(i), i));
      entry["host_nodes"] = names;
    }
    segments.push_back(entry);
  }
  doc["segments"] = segments;
  nlohmann::json bridges = nlohmann::json::array();
  for (const auto& b : result.bridges) {
    bridges.push_back({{"tensor", b.tensor},
                       {"producer", b.producer},
                       {"consumers", b.consumers},
                       {"bytes", OptionalBytes(b.bytes)}});
  }
  doc["bridges"] = bridges;
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [name, s] : result.graph_outputs) outputs[name] = s;
  doc["graph_outputs"] = outputs;
  nlohmann::json advice = nlohmann::json::array();
  for (const auto& a : result.advice) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const auto& c : a.candidates) {
      candidates.push_back({{"before_node", c.before_node},
                            {"nodes_moved", c.nodes_moved},
                            {"bytes", c.bytes},
                            {"tensors", c.tensors}});
    }
    advice.push_back({{"boundary", {a.boundary - 1, a.boundary}},
                      {"bytes", a.bytes},
                      {"large_bridges", a.large_bridges},
                      {"candidates", candidates},
                      {"message", a.message}});
  }
  doc["advice"] = advice;
  for (const auto& [key, value] : annotations.items()) doc[key] = value;
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------
namespace {

uint64_t WeightBytes(const onnx::ModelProto& proto) {
  uint64_t total = 0;
  io::ForEachTensor(proto.graph(), [&](const onnx::TensorProto& t) {
    if (t.data_type() != onnx::TensorProto::STRING) total += io::TensorPayloadBytes(t);
  });
  return total;
}

// Copies external weights into the tensors themselves.
void InlineWeights(io::Model& model) {
  io::ForEachTensor(*model.proto.mutable_graph(), [&](onnx::TensorProto& t) {
    if (!io::IsExternal(t)) return;
    io::TensorBytes bytes = io::ReadTensorBytes(model, t);
    t.set_raw_data(bytes.bytes.data(), bytes.bytes.size());
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  });
}

// Leaves room for the graph itself next to the weights under protobuf's limit.
constexpr uint64_t kInlineWeightLimit = io::kProtobufLimit - (uint64_t{64} << 20);

io::SaveResult SaveSegment(ir::Segment& segment, const fs::path& out, bool copy_weights) {
  io::SaveOptions options;
  if (copy_weights) {
    if (WeightBytes(segment.model.proto) < kInlineWeightLimit) {
      InlineWeights(segment.model);
    } else {
      options.external_data = true;
      options.external_file = segment.file + ".data";
    }
  }
  return io::Save(segment.model, out, options);
}

}  // namespace

fs::path DefaultSplitDir(const fs::path& model_path) {
  return fs::path(model_path.stem().string() + ".split");
}

WriteSplitResult WriteSplitFiles(ir::SplitResult& result, const io::Model& source,
                                 const fs::path& dir, const WriteSplitOptions& options) {
  WriteSplitResult written;
  written.dir = dir;
  std::set<std::string> notes;
  if (!options.segment_dir.empty()) io::CreateOutputDir(dir / options.segment_dir);
  for (auto& segment : result.segments) {
    if (!options.segment_dir.empty()) segment.file = options.segment_dir + "/" + segment.file;
    io::SaveResult saved = SaveSegment(segment, dir / segment.file, options.copy_weights);
    notes.insert(saved.notes.begin(), saved.notes.end());
  }
  std::string sha = !options.source_sha256.empty() ? options.source_sha256
                    : source.path.empty()          ? ""
                                                   : util::Sha256File(source.path);
  written.manifest =
      PipelineManifest(result, source, sha, options.copy_weights ? "copy" : "zero-copy",
                       options.annotations, options.source_name);
  io::WriteFileAtomic(dir / "pipeline.json", util::DumpJson(written.manifest, 2) + "\n");
  written.notes.assign(notes.begin(), notes.end());
  return written;
}

WriteSplitResult WriteSplit(ir::SplitResult& result, const io::Model& source,
                            const fs::path& dir_in, const WriteSplitOptions& options) {
  io::OutputDirRequest request{dir_in, options.inputs, {}, options.replace};
  if (!source.path.empty()) {
    for (const auto& f : io::ReferencedFiles(source)) request.inputs.push_back(f);
  }
  io::CheckOutputDir(request);
  io::StagingDir building(dir_in, "split");
  WriteSplitResult written = WriteSplitFiles(result, source, building.path(), options);
  building.Commit();
  written.dir = building.target();
  return written;
}

}  // namespace porttool::emit
