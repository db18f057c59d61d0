#include "lib/stages/rewrite.h"

#include <algorithm>

#include "lib/ir/graph_view.h"
#include "passes/input_shape_spec.h"

namespace porttool::stages {
namespace {

std::vector<std::string> FirstNotes(const std::vector<std::string>& notes) {
  size_t n = std::min(notes.size(), kJsonNotesPerStep);
  return {notes.begin(), notes.begin() + static_cast<std::ptrdiff_t>(n)};
}

size_t OmittedNotes(const std::vector<std::string>& notes) {
  return notes.size() - std::min(notes.size(), kJsonNotesPerStep);
}

passes::PassContext ContextFor(const TransformLimits& limits, const NoteSink& sink) {
  passes::PassContext context;
  context.max_tensor_bytes = limits.max_tensor_bytes;
  context.max_rounds = limits.max_rounds;
  context.note_sink = sink;
  return context;
}

// Given values: the shapes are pinned first (a value must fit the pinned shape) and the values set
// here, so nothing is left for fold-constants' own pinning. Returns the pins it still has to make.
std::string PinAndSetValues(io::Model& model, const std::string& input_shape,
                            const shape::InputValues& values) {
  if (values.empty()) return input_shape;
  shape::InputShapes pins;
  if (!input_shape.empty()) pins = passes::ParseInputShapes({input_shape});
  shape::PinAndSetInputs(model, pins, values);
  return "";
}

}  // namespace

passes::TransformReport SimplifyStage(io::Model& model, const SimplifyStageOptions& options) {
  passes::PassContext context = ContextFor(options.limits, options.note_sink);
  std::string pins = PinAndSetValues(model, options.input_shape, options.input_values);
  return passes::Simplify(model, pins, context);
}

passes::TransformReport FoldStage(io::Model& model, const FoldStageOptions& options) {
  ir::RequireDefinedNames(model.proto.graph());
  std::map<std::string, std::string> fold;
  std::string pins = PinAndSetValues(model, options.input_shape, options.input_values);
  if (!pins.empty()) fold["input-shape"] = pins;
  passes::PassContext context = ContextFor(options.limits, options.note_sink);
  return passes::Transform(model, {{"fold-constants", passes::PassOptions(fold)}},
                           /*fixed_point=*/false, context);
}

passes::TransformReport RewriteStage(io::Model& model, const RewriteStageOptions& options) {
  passes::ValidatePipeline(options.steps);
  ir::RequireDefinedNames(model.proto.graph());
  passes::PassContext context = ContextFor(options.limits, options.note_sink);
  return passes::Transform(model, options.steps, options.fixed_point, context);
}

nlohmann::json TransformJson(const passes::TransformReport& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& c : passes::OpCounts(r)) {
    ops.push_back({{"op", c.op}, {"before", c.before}, {"after", c.after}});
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"pass", s.id},
                     {"changes", s.result.changes},
                     {"failed", s.result.failed},
                     {"notes", FirstNotes(s.result.notes)},
                     {"notes_omitted", OmittedNotes(s.result.notes)}});
  }
  return {{"nodes_before", r.nodes_before},
          {"nodes_after", r.nodes_after},
          {"ops", ops},
          {"rounds", r.rounds},
          {"hit_cap", r.hit_cap},
          {"failed", r.failed},
          {"steps", steps}};
}

}  // namespace porttool::stages
