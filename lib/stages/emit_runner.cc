#include "lib/stages/emit_runner.h"

namespace porttool::stages {

emit::RunnerResult EmitRunnerStage(const emit::RunnerRequest& request) {
  return emit::EmitRunner(request);
}

nlohmann::json RunnerJson(const emit::RunnerResult& r) {
  nlohmann::json doc;
  for (const auto& s : r.segments) {
    doc["segments"].push_back(
        {{"file", s.file},
         {"role", s.role},
         {"custom_op", s.custom_op.empty() ? nullptr : nlohmann::json(s.custom_op)}});
  }
  doc["arena"] = {{"size_bytes", r.arena.arena_bytes},
                  {"naive_bytes", r.arena.naive_bytes},
                  {"lower_bound_bytes", r.arena.lower_bound_bytes},
                  {"alignment", r.arena.alignment}};
  for (const auto& t : r.arena.tensors) {
    doc["arena"]["tensors"].push_back({{"name", t.name},
                                       {"offset", t.offset},
                                       {"bytes", t.bytes},
                                       {"first_use", t.first_use},
                                       {"last_use", t.last_use}});
  }
  doc["int8"] = nlohmann::json::object();
  for (const auto& [name, q] : r.quant) {
    doc["int8"][name] = {
        {"scale", q.scale}, {"zero_point", q.zero_point}, {"min", q.min}, {"max", q.max}};
  }
  doc["int8_source"] = r.quant_source;
  for (const auto& f : r.files) doc["files"].push_back(f.string());
  return doc;
}

}  // namespace porttool::stages
