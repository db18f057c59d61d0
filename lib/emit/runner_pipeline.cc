#include "lib/emit/runner_pipeline.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/io/external_data.h"
#include "lib/io/input_file.h"
#include "lib/io/model.h"
#include "lib/ir/dtype.h"
#include "lib/util/error.h"

namespace porttool::emit {
namespace {

using nlohmann::json;

struct Reader {
  std::string file;
  [[noreturn]] void Fail(const std::string& pointer, const std::string& what) const {
    ThrowBadInput("{}: {}: {}", file, pointer, what);
  }
  const json& Field(const json& obj, const std::string& pointer, const char* key) const {
    if (!obj.is_object() || !obj.contains(key)) Fail(pointer, fmt::format("missing '{}'", key));
    return obj.at(key);
  }
  std::string String(const json& obj, const std::string& pointer, const char* key) const {
    const json& v = Field(obj, pointer, key);
    if (!v.is_string()) Fail(pointer + "/" + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  // A segment index: get<int>() would truncate 2^40 to 0, a valid-looking segment.
  int Index(const json& v, const std::string& pointer, int segments) const {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() >= 1u << 31) ||
        v.get<int64_t>() < 0 || v.get<int64_t>() >= segments) {
      Fail(pointer,
           fmt::format("expected a segment index from 0 to {}, got {}", segments - 1, v.dump()));
    }
    return static_cast<int>(v.get<int64_t>());
  }
  const json& Array(const json& obj, const std::string& pointer, const char* key) const {
    const json& v = Field(obj, pointer, key);
    if (!v.is_array()) Fail(pointer + "/" + key, "expected an array, got " + v.dump());
    return v;
  }
};

PipelineTensor ParseTensor(const Reader& r, const json& t, const std::string& ptr) {
  PipelineTensor out;
  const json& name = r.Field(t, ptr, "name");
  const json& dtype = r.Field(t, ptr, "dtype");
  if (!name.is_string() || !dtype.is_string()) r.Fail(ptr, "'name' and 'dtype' must be strings");
  out.name = name.get<std::string>();
  auto code = ir::DtypeFromName(dtype.get<std::string>());
  if (!code) r.Fail(ptr + "/dtype", "unknown dtype '" + dtype.get<std::string>() + "'");
  out.dtype = *code;
  if (!t.contains("shape") || !t["shape"].is_array()) {
    r.Fail(ptr, fmt::format("tensor '{}' has no static shape: split with pinned input shapes so "
                            "that every bridge has one",
                            out.name));
  }
  for (const auto& d : t["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      r.Fail(ptr + "/shape", fmt::format("tensor '{}' has a dynamic dim: split with "
                                         "pinned input shapes so that every bridge is static",
                                         out.name));
    }
    out.dims.push_back(d.get<int64_t>());
  }
  out.bytes = static_cast<uint64_t>(ir::ElementCount(out.dims)) * ir::DtypeSize(out.dtype);
  return out;
}

std::vector<PipelineTensor> ParseTensors(const Reader& r, const json& seg, const std::string& ptr,
                                         const char* key) {
  const json& list = r.Field(seg, ptr, key);
  if (!list.is_array()) r.Fail(ptr + "/" + key, "must be an array");
  std::vector<PipelineTensor> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(ParseTensor(r, list[i], fmt::format("{}/{}/{}", ptr, key, i)));
  }
  return out;
}

// The segment file must declare what pipeline.json says: a stale or swapped file is the usual
// cause of a runner that reads the wrong bytes.
void CheckAgainstFile(const PipelineSegment& seg, const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    ThrowBadInput("segment file {} is missing (named by pipeline.json): re-run split",
                  path.string());
  }
  io::Model model = io::Load(path);
  const auto& g = model.proto.graph();
  std::set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  auto check = [&](const std::vector<PipelineTensor>& want, const auto& have, const char* what) {
    std::vector<const onnx::ValueInfoProto*> real;
    for (const auto& v : have) {
      if (!inits.count(v.name())) real.push_back(&v);
    }
    if (real.size() != want.size()) {
      ThrowBadInput(
          "{}: {} {}s, pipeline.json lists {}: the file does not belong to this "
          "pipeline.json (re-run split)",
          path.string(), real.size(), what, want.size());
    }
    for (const auto& t : want) {
      const onnx::ValueInfoProto* v = nullptr;
      for (const auto* r : real) {
        if (r->name() == t.name) v = r;
      }
      if (!v) {
        ThrowBadInput("{}: has no {} '{}' that pipeline.json lists (re-run split)", path.string(),
                      what, t.name);
      }
      auto dims = ir::StaticShape(v->type());
      if (v->type().tensor_type().elem_type() != t.dtype || (dims && *dims != t.dims)) {
        ThrowBadInput("{}: {} '{}' is {} {} in the file, {} [{}] in pipeline.json", path.string(),
                      what, t.name, ir::DtypeName(v->type().tensor_type().elem_type()),
                      ir::ShapeToString(v->type()), ir::DtypeName(t.dtype), fmt::join(t.dims, ","));
      }
    }
  };
  check(seg.inputs, g.input(), "input");
  check(seg.outputs, g.output(), "output");
}

void ParseBridges(const Reader& r, const json& doc, Pipeline& p) {
  const json& bridges = r.Array(doc, "", "bridges");
  int n = static_cast<int>(p.segments.size());
  for (size_t i = 0; i < bridges.size(); ++i) {
    std::string ptr = fmt::format("/bridges/{}", i);
    PipelineBridge b;
    b.tensor = r.String(bridges[i], ptr, "tensor");
    b.producer = r.Index(r.Field(bridges[i], ptr, "producer"), ptr + "/producer", n);
    const json& consumers = r.Array(bridges[i], ptr, "consumers");
    for (size_t j = 0; j < consumers.size(); ++j) {
      std::string cp = fmt::format("{}/consumers/{}", ptr, j);
      int c = r.Index(consumers[j], cp, n);
      if (c <= b.producer) r.Fail(cp, "consumer must be a later segment");
      b.consumers.push_back(c);
    }
    p.bridges.push_back(std::move(b));
  }
  const json& outputs = r.Field(doc, "", "graph_outputs");
  if (!outputs.is_object()) r.Fail("/graph_outputs", "expected an object, got " + outputs.dump());
  for (const auto& [name, seg] : outputs.items()) {
    p.graph_outputs[name] = r.Index(seg, "/graph_outputs/" + name, n);
  }
}

// Segment tensors become graph inputs, graph outputs or bridges; every bridge must be an output
// of its producer and an input of its consumers.
void LinkTensors(const Reader& r, Pipeline& p) {
  std::set<std::string> bridged, seen_inputs;
  for (size_t i = 0; i < p.bridges.size(); ++i) {
    const auto& b = p.bridges[i];
    bridged.insert(b.tensor);
    FindTensor(p.segments[b.producer], b.tensor);  // throws when the producer lacks it
    for (int c : b.consumers) {
      bool found = false;
      for (const auto& t : p.segments[c].inputs) found |= t.name == b.tensor;
      if (!found)
        r.Fail(fmt::format("/bridges/{}", i),
               fmt::format("segment {} does not read '{}'", c, b.tensor));
    }
  }
  for (const auto& seg : p.segments) {
    for (const auto& t : seg.inputs) {
      if (!bridged.count(t.name) && seen_inputs.insert(t.name).second) {
        p.graph_input_list.push_back(t);
      }
    }
    for (const auto& t : seg.outputs) {
      if (p.graph_outputs.count(t.name)) p.graph_output_list.push_back(t);
    }
  }
  if (p.graph_output_list.size() != p.graph_outputs.size()) {
    r.Fail("/graph_outputs", "names an output no segment produces");
  }
}

Pipeline ParsePipeline(const std::filesystem::path& pipeline_json);

}  // namespace

const PipelineTensor& FindTensor(const PipelineSegment& segment, const std::string& name) {
  for (const auto& t : segment.outputs) {
    if (t.name == name) return t;
  }
  for (const auto& t : segment.inputs) {
    if (t.name == name) return t;
  }
  ThrowBadInput("segment {} has no tensor '{}' (pipeline.json is inconsistent)", segment.file,
                name);
}

Pipeline LoadPipeline(const std::filesystem::path& pipeline_json) {
  try {
    return ParsePipeline(pipeline_json);
  } catch (const nlohmann::json::exception& e) {
    ThrowBadInput("{}: a field has the wrong type: {}", pipeline_json.string(), e.what());
  }
}

namespace {
Pipeline ParsePipeline(const std::filesystem::path& pipeline_json) {
  Reader r{pipeline_json.string()};
  json doc = json::parse(io::ReadInputFile(pipeline_json, "pipeline"), nullptr, false);
  if (doc.is_discarded()) ThrowBadInput("{}: not valid JSON", r.file);
  if (!doc.is_object() || doc.value("format", "") != "porttool-pipeline/1") {
    r.Fail("/format", "not a porttool pipeline (expected \"porttool-pipeline/1\" from split)");
  }
  Pipeline p;
  p.dir = std::filesystem::absolute(pipeline_json).parent_path();
  const json& segments = r.Field(doc, "", "segments");
  if (!segments.is_array() || segments.empty()) r.Fail("/segments", "must be a non-empty array");
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string ptr = fmt::format("/segments/{}", i);
    PipelineSegment seg;
    const json& file = r.Field(segments[i], ptr, "file");
    // A relative path below the pipeline's directory (port bundles keep segments/ beside it);
    // the same rule as an external-data location: nothing absolute, no "..".
    if (!file.is_string() || io::UnsafeLocationReason(file.get<std::string>())) {
      r.Fail(ptr + "/file", "must be a relative path inside the pipeline directory");
    }
    seg.file = file.get<std::string>();
    std::string role = r.String(segments[i], ptr, "role");
    if (role != "accelerator" && role != "host")
      r.Fail(ptr + "/role", "unknown role '" + role + "'");
    seg.accelerator = role == "accelerator";
    seg.inputs = ParseTensors(r, segments[i], ptr, "inputs");
    seg.outputs = ParseTensors(r, segments[i], ptr, "outputs");
    p.segments.push_back(std::move(seg));
  }
  ParseBridges(r, doc, p);
  LinkTensors(r, p);
  for (const auto& seg : p.segments) CheckAgainstFile(seg, p.dir / seg.file);
  return p;
}

}  // namespace

}  // namespace porttool::emit
