#include "lib/stages/emit_header.h"

#include <fmt/format.h>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/shape_completion.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

// Static shapes for every tensor: pinned inputs, then inference. Tensors inference leaves
// unknown are reported by the emitter when it needs them (I/O buffers, arena), naming the tensor.
void MakeShapesStatic(io::Model& model, const shape::InputShapes& pins,
                      std::vector<std::string>& notes) {
  runtime::ShapeCompletion c = runtime::CompleteShapes(model, pins);
  if (!c.dynamic_inputs.empty()) {
    ThrowUsage("inputs with unknown dims: {}; pin the input shape (e.g. {})",
               util::Join(c.dynamic_inputs, ", "), shape::ExampleInputShapes(model));
  }
  notes.insert(notes.end(), c.inference.notes.begin(), c.inference.notes.end());
  if (!c.by_execution.empty()) {
    notes.push_back(fmt::format(
        "{} tensor shape(s) static inference left unknown were taken from one run of the "
        "executor (e.g. '{}')",
        c.by_execution.size(), c.by_execution.front()));
  }
  if (!c.unresolved.empty()) notes.push_back(c.Summary());
}

}  // namespace

EmitHeaderStageResult EmitHeaderStage(const io::Model& model,
                                      const EmitHeaderStageOptions& options) {
  EmitHeaderStageResult result;
  ir::RequireDefinedNames(model.proto.graph());
  io::Model completed = model;
  MakeShapesStatic(completed, options.input_shapes, result.notes);
  result.emitted = emit::EmitHeaderFiles(completed, options.request);
  for (const auto& c : result.emitted.header.collisions) {
    result.notes.push_back(fmt::format("tensor '{}' is {} in C: '{}' already had that identifier",
                                       c.name, c.c_name, c.conflict));
  }
  return result;
}

nlohmann::json EmitHeaderJson(const emit::EmitResult& r) {
  nlohmann::json doc;
  doc["buffers"] = nlohmann::json::array();
  for (const auto& b : r.header.buffers) {
    doc["buffers"].push_back(nlohmann::json{{"name", b.name},
                                            {"c_name", b.c_name},
                                            {"kind", b.is_input ? "input" : "output"},
                                            {"dtype", ir::DtypeName(b.dtype)},
                                            {"shape", b.dims},
                                            {"elements", b.elements},
                                            {"bytes", b.bytes},
                                            {"aligned_bytes", b.aligned_bytes}});
  }
  if (r.arena) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : r.arena->tensors) {
      tensors.push_back({{"name", t.name},
                         {"c_name", r.header.c_names.at(t.name)},
                         {"offset", t.offset},
                         {"bytes", t.bytes},
                         {"first_use", t.first_use},
                         {"last_use", t.last_use}});
    }
    doc["arena"] = {{"size_bytes", r.arena->arena_bytes},
                    {"naive_bytes", r.arena->naive_bytes},
                    {"lower_bound_bytes", r.arena->lower_bound_bytes},
                    {"alignment", r.arena->alignment},
                    {"strategy", r.arena->strategy},
                    {"steps", r.liveness->order.size()},
                    {"tensors", tensors}};
  }
  if (r.weights) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& e : r.weights->entries) {
      tensors.push_back({{"name", e.name}, {"offset", e.offset}, {"bytes", e.bytes}});
    }
    doc["weights"] = {{"size_bytes", r.weights->total_bytes}, {"tensors", tensors}};
  }
  doc["renamed"] = nlohmann::json::array();
  for (const auto& c : r.header.collisions) {
    doc["renamed"].push_back({{"name", c.name}, {"c_name", c.c_name}, {"conflict", c.conflict}});
  }
  for (const auto& f : r.files) doc["files"].push_back(f.string());
  return doc;
}

}  // namespace porttool::stages
