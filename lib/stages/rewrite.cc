#include "lib/stages/rewrite.h"

#include <algorithm>

#include "lib/ir/graph_view.h"

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

}  // namespace

passes::TransformReport SimplifyStage(io::Model& model, const SimplifyStageOptions& options) {
  passes::PassContext context = ContextFor(options.limits, options.note_sink);
  return passes::Simplify(model, options.input_shape, context);
}

passes::TransformReport FoldStage(io::Model& model, const FoldStageOptions& options) {
  ir::RequireDefinedNames(model.proto.graph());
  std::map<std::string, std::string> fold;
  if (!options.input_shape.empty()) fold["input-shape"] = options.input_shape;
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
