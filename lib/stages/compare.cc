#include "lib/stages/compare.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "lib/quant/samples.h"
#include "lib/runtime/tensor_store.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

io::Model Pinned(const io::Model& model, const shape::InputShapes& shapes) {
  io::Model m = model;
  if (!shapes.empty()) shape::ApplyInputShapes(m, shapes);
  return m;
}

runtime::TensorMap StoredInputs(const runtime::TensorStore& store) {
  runtime::TensorMap inputs;
  for (const auto& e : store.entries()) {
    if (e.role == "input") inputs[e.name] = store.Read(e);
  }
  return inputs;
}

}  // namespace

runtime::ModelComparison CompareStage(const io::Model& a_in, const io::Model* b_in,
                                      const CompareStageOptions& o) {
  runtime::CompareOptions options = o.compare;
  io::Model a = Pinned(a_in, o.input_shapes);
  if (!o.load_outputs.empty()) {
    if (b_in || !o.save_outputs.empty() || !o.inputs.empty()) {
      ThrowUsage(
          "comparing ONE model against saved tensors (inputs included) takes no second model, "
          "no new store and no given inputs");
    }
    runtime::TensorStore store = runtime::TensorStore::Open(o.load_outputs);
    return runtime::CompareWithStore(a, StoredInputs(store), store, options);
  }
  runtime::TensorMap inputs;
  {
    runtime::Session specs(a, options.session);
    shape::CheckInputRanges(a, o.input_ranges);
    inputs = runtime::CompleteWithRandom(specs, o.inputs, o.seed, o.input_ranges);
  }
  if (o.save_outputs.empty()) {
    if (!b_in) ThrowUsage("nothing to compare: give a second model, or a store to record into");
    return runtime::CompareModels(a, Pinned(*b_in, o.input_shapes), inputs, options);
  }
  runtime::TensorStore store = runtime::TensorStore::Create(o.save_outputs);
  std::function<bool(const std::string&)> keep;
  if (options.per_tensor) keep = [](const std::string&) { return true; };
  runtime::RecordRun(a, inputs, options.session, keep, store);
  if (!b_in) return {};
  return runtime::CompareWithStore(Pinned(*b_in, o.input_shapes), inputs, store, options);
}

runtime::IsolateResult IsolateStage(const io::Model& a_in, const io::Model& b_in,
                                    const CompareStageOptions& o,
                                    const std::filesystem::path& data_dir) {
  if (!data_dir.empty() && !o.inputs.empty()) {
    ThrowUsage("give the inputs as a data directory or one by one, not both");
  }
  io::Model a = Pinned(a_in, o.input_shapes), b = Pinned(b_in, o.input_shapes);
  runtime::IsolateComparison isolate(a, b, o.compare);
  const std::vector<runtime::InputSpec> specs = runtime::InputSpecsOf(a);
  if (data_dir.empty()) {
    shape::CheckInputRanges(a, o.input_ranges);
    isolate.AddSample(runtime::CompleteWithRandom(specs, o.inputs, o.seed, o.input_ranges));
    return isolate.Result();
  }
  quant::SampleSet set = quant::ListSamples(data_dir, specs, std::nullopt);
  if (set.size() == 0) ThrowBadInput("'{}' holds no sample", data_dir.string());
  // One sample in memory at a time: the statistics accumulate, the tensors do not.
  for (size_t i = 0; i < set.size(); ++i) isolate.AddSample(quant::LoadSample(set, i, specs));
  return isolate.Result();
}

std::vector<quant::TaskResult> CompareTasks(const io::Model& a_in, const io::Model& b_in,
                                            const CompareStageOptions& o,
                                            const quant::TaskAssignment& tasks) {
  io::Model a = Pinned(a_in, o.input_shapes), b = Pinned(b_in, o.input_shapes);
  runtime::Session sa(a, o.compare.session);
  runtime::Session sb(b, o.compare.CandidateSession());
  const auto names = sa.output_names();
  for (const auto& [out, _] : tasks.per_output) {
    if (std::find(names.begin(), names.end(), out) == names.end()) {
      ThrowUsage("--task for '{}', which is not an output of the first model (outputs: {})", out,
                 util::Join(names, ", "));
    }
  }
  runtime::TensorMap inputs = runtime::CompleteWithRandom(sa, o.inputs, o.seed, o.input_ranges);
  auto fa = sa.Run(inputs), fb = sb.Run(inputs);
  std::vector<quant::TaskResult> results;
  for (const auto& x : fa) {
    const quant::TaskSpec spec = tasks.For(x.name);
    if (spec.kind == quant::TaskKind::kRegress) continue;
    auto y = std::find_if(fb.begin(), fb.end(), [&](const auto& t) { return t.name == x.name; });
    if (y == fb.end()) continue;  // reported as unmatched by the comparison
    const std::pair<int64_t, int64_t> hw =
        inputs.size() == 1 ? quant::ImageHw(inputs.begin()->second) : std::pair<int64_t, int64_t>{};
    results.push_back(quant::Summarize(
        spec, x.name, quant::ScoreSample(spec, x.name, "input", x.value, y->value, nullptr, hw)));
  }
  return results;
}

namespace {

nlohmann::json StatsJson(const runtime::TensorComparison& c, const runtime::CompareOptions& o) {
  const auto& s = c.stats;
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j = {{"name", c.name},
                      {"max_abs", num(s.max_abs)},
                      {"mean_abs", num(s.mean_abs)},
                      {"median_abs", num(s.median_abs)},
                      {"max_rel", num(s.max_rel)},
                      {"mean_rel", num(s.mean_rel)},
                      {"median_rel", num(s.median_rel)},
                      {"cosine", num(s.cosine)},
                      {"sqnr_db", num(s.sqnr_db)},
                      {"rtol", o.For(c.name).rtol},
                      {"atol", o.For(c.name).atol},
                      {"within_tolerance", s.within_tolerance}};
  if (!c.node.empty()) j["node"] = c.node;
  if (!c.op.empty()) j["op"] = c.op;
  if (!s.comparable) j["note"] = s.note;
  return j;
}

}  // namespace

nlohmann::json IsolateJson(const runtime::IsolateResult& result,
                           const runtime::CompareOptions& options) {
  nlohmann::json doc = {
      {"samples", result.samples},          {"rtol", options.tolerance.rtol},
      {"atol", options.tolerance.atol},     {"within_tolerance", result.within_tolerance},
      {"outputs", nlohmann::json::array()}, {"unmatched_outputs", result.unmatched_outputs},
      {"isolate", nlohmann::json::array()}, {"not_comparable", nlohmann::json::array()}};
  for (const auto& c : result.outputs) doc["outputs"].push_back(StatsJson(c, options));
  auto stats = [&](const std::string& tensor, const runtime::TensorStats& s) {
    runtime::TensorComparison c;
    c.name = tensor;
    c.stats = s;
    nlohmann::json j = StatsJson(c, options);
    j.erase("name");
    return j;
  };
  for (size_t i = 0; i < result.tensors.size(); ++i) {
    const auto& t = result.tensors[i];
    doc["isolate"].push_back({{"rank", i + 1},
                              {"node", t.node},
                              {"op", t.op},
                              {"tensor", t.tensor},
                              {"from_a", t.from_a},
                              {"cone_nodes", t.cone_nodes},
                              {"local_error", stats(t.tensor, t.local)},
                              {"accumulated_error", stats(t.tensor, t.accumulated)}});
  }
  for (const auto& n : result.not_comparable) {
    doc["not_comparable"].push_back({{"model", n.model},
                                     {"node", n.node},
                                     {"op", n.op},
                                     {"tensor", n.tensor},
                                     {"reason", n.reason}});
  }
  return doc;
}

nlohmann::json CompareJson(const runtime::ModelComparison& result,
                           const runtime::CompareOptions& options, bool per_tensor) {
  nlohmann::json doc = {{"rtol", options.tolerance.rtol},
                        {"atol", options.tolerance.atol},
                        {"within_tolerance", result.within_tolerance},
                        {"outputs", nlohmann::json::array()},
                        {"unmatched_outputs", result.unmatched_outputs}};
  for (const auto& c : result.outputs) doc["outputs"].push_back(StatsJson(c, options));
  if (per_tensor) {
    doc["per_tensor"] = nlohmann::json::array();
    for (const auto& c : result.intermediates) doc["per_tensor"].push_back(StatsJson(c, options));
    doc["first_divergent"] = result.first_divergent
                                 ? StatsJson(result.intermediates[*result.first_divergent], options)
                                 : nlohmann::json(nullptr);
  }
  return doc;
}

}  // namespace porttool::stages
