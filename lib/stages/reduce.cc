#include "lib/stages/reduce.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "lib/io/atomic_file.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/split.h"
#include "lib/runtime/shape_completion.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/sha256.h"
#include "passes/constant_to_initializer.h"

namespace porttool::stages {

// ---- Candidates ----

struct CandidateBuilder::Impl {
  Impl(const io::Model& model, const io::Model& typed)
      : source(model),
        view(model.proto.graph()),
        typed_view(typed.proto.graph()),
        types(typed, typed_view, shape::TypeInference()) {}
  const io::Model& source;
  ir::GraphView view;
  ir::GraphView typed_view;
  mutable ir::TensorTypes types;
  std::vector<int> position;  // node index -> topological position
};

namespace {
// A Constant node is a weight in another spelling (PyTorch and Paddle exports hold every weight
// in one): it is no unit of the search but travels with the nodes that read it, so removing it
// never turns a weight into a graph input, which a converter would reject for another reason.
bool IsWeightNode(const onnx::NodeProto& node) {
  return node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx") &&
         node.input_size() == 0;
}
}  // namespace

CandidateBuilder::CandidateBuilder(const io::Model& source, const io::Model* typed)
    : impl_(std::make_unique<Impl>(source, typed ? *typed : source)) {
  auto all = impl_->view.TopoOrder();
  impl_->position.assign(impl_->view.node_count(), 0);
  for (size_t p = 0; p < all.size(); ++p) impl_->position[all[p]] = static_cast<int>(p);
  for (int i : all) {
    if (!IsWeightNode(impl_->view.node(i))) order_.push_back(i);
  }
  if (order_.empty()) order_ = all;  // a graph of Constants only: they are the units
}

CandidateBuilder::~CandidateBuilder() = default;

std::vector<std::string> CandidateBuilder::NodeNames(const std::vector<int>& nodes) const {
  std::vector<std::string> names;
  for (int i : nodes) {
    const auto& node = impl_->view.node(i);
    names.push_back(node.name().empty() ? "#" + std::to_string(i) + " (" + node.op_type() + ")"
                                        : node.name());
  }
  return names;
}

// Inputs: what the kept nodes read that none of them produces (initializers are carried).
// Outputs: what they produce that a removed node or the source's outputs read; a candidate whose
// results nobody reads keeps its last results, so that it still computes something.
io::Model CandidateBuilder::Build(std::vector<int> nodes) const {
  const auto& view = impl_->view;
  std::unordered_set<int> units(nodes.begin(), nodes.end());
  for (int i : std::vector<int>(nodes)) {
    for (const auto& name : view.NodeReads(i)) {
      int p = name.empty() ? -1 : view.Producer(name);
      if (p >= 0 && IsWeightNode(view.node(p)) && units.insert(p).second) nodes.push_back(p);
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [this](int a, int b) { return impl_->position[a] < impl_->position[b]; });
  std::unordered_set<int> kept(nodes.begin(), nodes.end());
  std::unordered_set<std::string> produced;
  for (int i : nodes) {
    for (const auto& out : view.node(i).output()) {
      if (!out.empty()) produced.insert(out);
    }
  }
  ir::SubModelSpec spec;
  spec.nodes = nodes;
  spec.graph_name = impl_->source.proto.graph().name();
  std::unordered_set<std::string> seen;
  for (int i : nodes) {
    for (const auto& name : view.NodeReads(i)) {
      if (name.empty() || produced.count(name) || view.Initializer(name)) continue;
      if (seen.insert(name).second) spec.inputs.push_back(name);
    }
  }
  std::vector<std::string> unread;
  for (int i : nodes) {
    for (const auto& out : view.node(i).output()) {
      if (out.empty()) continue;
      const auto& consumers = view.Consumers(out);
      bool read_outside =
          view.IsGraphOutput(out) || std::any_of(consumers.begin(), consumers.end(),
                                                 [&kept](int c) { return kept.count(c) == 0; });
      bool read_inside = std::any_of(consumers.begin(), consumers.end(),
                                     [&kept](int c) { return kept.count(c) != 0; });
      if (read_outside) spec.outputs.push_back(out);
      if (!read_inside) unread.push_back(out);
    }
  }
  if (spec.outputs.empty()) spec.outputs = unread;
  io::Model candidate = ir::BuildSubModel(impl_->source, view, spec, impl_->types);
  if (constants_as_initializers_) {
    std::vector<std::string> notes;
    passes::ConstantsToInitializers(*candidate.proto.mutable_graph(), notes);
  }
  return candidate;
}

namespace {

bool HoldsSubgraph(const onnx::NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) {
    return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
  });
}

std::string ModelHash(const io::Model& model) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    model.proto.SerializeToCodedStream(&coded);
  }
  util::Sha256 sha;
  sha.Update({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return sha.HexDigest();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Thrown between rounds when the caller's cancel flag is set.
struct Interrupted {};

// Runs the checks: builds and writes candidates, consults and fills the cache, checks a round's
// candidates in parallel, keeps the best failing candidate and the step log.
class Evaluator {
 public:
  Evaluator(CandidateCheck& check, const ReduceOptions& options, const CandidateBuilder& builder,
            ReduceResult& result)
      : check_(check), options_(options), builder_(builder), result_(result) {
    LoadCache();
  }

  // Verdicts for `sets`, checked up to `jobs` at a time.
  std::vector<bool> Evaluate(const std::vector<std::vector<int>>& sets, const std::string& phase,
                             bool use_cache = true, const io::Model* given = nullptr) {
    std::vector<bool> verdicts;
    size_t jobs = static_cast<size_t>(std::max(1, options_.jobs));
    for (size_t start = 0; start < sets.size(); start += jobs) {
      size_t end = std::min(sets.size(), start + jobs);
      std::vector<std::vector<int>> round(sets.begin() + start, sets.begin() + end);
      auto part = EvaluateRound(round, phase, use_cache, given);
      verdicts.insert(verdicts.end(), part.begin(), part.end());
    }
    return verdicts;
  }

  // The index of the first failing set in order, or -1; stops after the round that found one.
  int FirstFailing(const std::vector<std::vector<int>>& sets, const std::string& phase) {
    size_t jobs = static_cast<size_t>(std::max(1, options_.jobs));
    for (size_t start = 0; start < sets.size(); start += jobs) {
      size_t end = std::min(sets.size(), start + jobs);
      std::vector<std::vector<int>> round(sets.begin() + start, sets.begin() + end);
      auto verdicts = EvaluateRound(round, phase, true);
      for (size_t i = 0; i < verdicts.size(); ++i) {
        if (verdicts[i]) return static_cast<int>(start + i);
      }
    }
    return -1;
  }

  // The source itself (not a candidate built from all of its nodes), `runs` times, `jobs` at a
  // time, never from the cache: a check that fails only sometimes shows here.
  std::vector<bool> EvaluateSource(const io::Model& source, const std::vector<int>& all, int runs) {
    return Evaluate(std::vector<std::vector<int>>(runs, all), "original", false, &source);
  }

  // The known-good model, checked as the user gave it.
  bool CheckFile(const std::filesystem::path& file, const std::string& phase) {
    auto start = std::chrono::steady_clock::now();
    CheckVerdict v = check_.Check(io::Model{}, file, {});
    ++result_.invocations;
    Log({phase, ++sequence_, 0, v.failing, false, SecondsSince(start), v.detail});
    return v.failing;
  }

  void WriteReport(const nlohmann::json& doc) {
    io::WriteFileAtomic(options_.work_dir / "reduce.json", doc.dump(2) + "\n");
  }

 private:
  struct Job {
    std::vector<int> nodes;
    io::Model model;
    std::string hash;
    std::filesystem::path file;
    int sequence = 0;
    std::optional<CheckVerdict> verdict;
    bool cached = false;
    double seconds = 0;
    std::exception_ptr error;
  };

  std::vector<bool> EvaluateRound(const std::vector<std::vector<int>>& sets,
                                  const std::string& phase, bool use_cache,
                                  const io::Model* given = nullptr) {
    if (options_.cancel && options_.cancel->load()) throw Interrupted{};
    std::vector<Job> jobs(sets.size());
    for (size_t i = 0; i < sets.size(); ++i) Prepare(jobs[i], sets[i], use_cache, given);
    RunParallel(jobs);
    // A command killed by Ctrl-C says nothing about its candidate: nothing of the round is kept.
    if (options_.cancel && options_.cancel->load()) throw Interrupted{};
    std::vector<bool> verdicts;
    for (auto& job : jobs) {
      if (job.error) std::rethrow_exception(job.error);
    }
    for (auto& job : jobs) {
      verdicts.push_back(job.verdict->failing);
      Finish(job, phase);
    }
    SaveCache();
    return verdicts;
  }

  void Prepare(Job& job, const std::vector<int>& nodes, bool use_cache, const io::Model* given) {
    job.nodes = nodes;
    job.model = given ? *given : builder_.Build(nodes);
    job.hash = ModelHash(job.model);
    job.sequence = ++sequence_;
    if (use_cache) {
      auto hit = cache_.find(job.hash);
      if (hit != cache_.end()) {
        job.verdict = hit->second;
        job.cached = true;
        return;
      }
    }
    if (check_.needs_file()) {
      job.file = options_.work_dir / fmt::format("c{:04d}.onnx", job.sequence);
      io::Save(job.model, job.file);
    }
  }

  void RunOne(Job& job) {
    if (job.verdict) return;
    auto start = std::chrono::steady_clock::now();
    try {
      job.verdict = check_.Check(job.model, job.file, job.nodes);
    } catch (...) {
      job.error = std::current_exception();
    }
    job.seconds = SecondsSince(start);
  }

  void RunParallel(std::vector<Job>& jobs) {
    std::vector<Job*> pending;
    for (auto& job : jobs) {
      if (!job.verdict) pending.push_back(&job);
    }
    if (pending.size() <= 1) {
      for (auto* job : pending) RunOne(*job);
      return;
    }
    std::vector<std::thread> threads;
    for (auto* job : pending) threads.emplace_back([this, job] { RunOne(*job); });
    for (auto& t : threads) t.join();
  }

  void Finish(Job& job, const std::string& phase) {
    if (!job.cached) {
      ++result_.invocations;
      cache_[job.hash] = *job.verdict;
    } else {
      ++result_.cache_hits;
    }
    RemoveCandidateFiles(job.file);
    bool better =
        job.verdict->failing && (result_.nodes.empty() || job.nodes.size() < result_.nodes.size());
    if (better) {
      result_.nodes = job.nodes;
      result_.model = std::move(job.model);
      io::Save(result_.model, options_.work_dir / "best.onnx");
    }
    Log({phase, job.sequence, job.nodes.size(), job.verdict->failing, job.cached, job.seconds,
         job.verdict->detail});
  }

  // The candidate and what its check left beside it (<file>.log, <file>.data/).
  static void RemoveCandidateFiles(const std::filesystem::path& file) {
    if (file.empty()) return;
    std::error_code ec;
    std::filesystem::remove(file, ec);
    std::filesystem::remove(file.string() + ".log", ec);
    std::filesystem::remove_all(file.string() + ".data", ec);
  }

  void Log(const ReduceStep& step) {
    result_.steps.push_back(step);
    if (options_.on_step) options_.on_step(step);
  }

  std::filesystem::path CachePath() const { return options_.work_dir / "cache.json"; }

  // The cache of an earlier run with the same check (command and criteria) is reused.
  void LoadCache() {
    if (check_.signature().empty()) return;
    std::ifstream in(CachePath());
    if (!in) return;
    auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || doc.value("check", "") != check_.signature()) return;
    const auto& verdicts = doc.value("verdicts", nlohmann::json::object());
    if (!verdicts.is_object()) return;
    for (const auto& [hash, v] : verdicts.items()) {
      if (!v.is_object()) continue;
      CheckVerdict verdict;
      verdict.failing = v.value("failing", false);
      verdict.detail = v.value("detail", "");
      cache_[hash] = verdict;
    }
  }

  void SaveCache() const {
    if (check_.signature().empty()) return;
    nlohmann::json verdicts = nlohmann::json::object();
    for (const auto& [hash, v] : cache_) {
      verdicts[hash] = {{"failing", v.failing}, {"detail", v.detail}};
    }
    nlohmann::json doc = {{"check", check_.signature()}, {"verdicts", verdicts}};
    io::WriteFileAtomic(CachePath(), doc.dump() + "\n");
  }

  CandidateCheck& check_;
  const ReduceOptions& options_;
  const CandidateBuilder& builder_;
  ReduceResult& result_;
  std::map<std::string, CheckVerdict> cache_;
  int sequence_ = 0;
};

std::vector<int> Positions(const std::vector<int>& order, size_t begin, size_t end) {
  return std::vector<int>(order.begin() + begin, order.begin() + end);
}

// Up to `jobs` points strictly inside (lo, hi), evenly spaced.
std::vector<size_t> Probes(size_t lo, size_t hi, int jobs) {
  std::vector<size_t> points;
  size_t span = hi - lo;
  size_t count = std::min<size_t>(std::max(1, jobs), span - 1);
  for (size_t i = 1; i <= count; ++i) {
    size_t p = lo + span * i / (count + 1);
    if (p > lo && p < hi && (points.empty() || points.back() != p)) points.push_back(p);
  }
  return points;
}

// The shortest failing prefix of the topological order: [0, k) fails, [0, k-1) was seen passing.
size_t ShortestFailingPrefix(Evaluator& eval, const std::vector<int>& order, int jobs) {
  size_t lo = 0, hi = order.size();
  while (hi - lo > 1) {
    auto points = Probes(lo, hi, jobs);
    std::vector<std::vector<int>> sets;
    for (size_t p : points) sets.push_back(Positions(order, 0, p));
    auto verdicts = eval.Evaluate(sets, "prefix");
    size_t new_hi = hi;
    for (size_t i = 0; i < points.size(); ++i) {
      if (verdicts[i]) {
        new_hi = points[i];
        break;
      }
      lo = points[i];
    }
    hi = new_hi;
  }
  return hi;
}

// The latest start j for which the window [j, end) still fails.
size_t LatestFailingStart(Evaluator& eval, const std::vector<int>& order, size_t end, int jobs) {
  size_t lo = 0, hi = end;  // window(lo) fails; window(hi) is empty
  while (hi - lo > 1) {
    auto points = Probes(lo, hi, jobs);
    std::vector<std::vector<int>> sets;
    for (size_t p : points) sets.push_back(Positions(order, p, end));
    auto verdicts = eval.Evaluate(sets, "window");
    for (size_t i = points.size(); i-- > 0;) {
      if (verdicts[i]) {
        lo = points[i];
        break;
      }
      hi = points[i];
    }
  }
  return lo;
}

std::vector<std::vector<int>> Chunks(const std::vector<int>& set, size_t n) {
  std::vector<std::vector<int>> chunks;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t end = start + (set.size() - start) / (n - i);
    chunks.emplace_back(set.begin() + start, set.begin() + end);
    start = end;
  }
  return chunks;
}

std::vector<int> Without(const std::vector<int>& set, const std::vector<int>& chunk) {
  std::unordered_set<int> drop(chunk.begin(), chunk.end());
  std::vector<int> rest;
  for (int v : set) {
    if (!drop.count(v)) rest.push_back(v);
  }
  return rest;
}

// Zeller's ddmin: try each of n chunks alone, then each complement; refine the granularity when
// neither fails. Ends 1-minimal: at n = |set| every single-node removal was checked and passed.
std::vector<int> DeltaDebug(Evaluator& eval, std::vector<int> set, bool& minimal) {
  size_t n = 2;
  while (set.size() >= 2) {
    auto chunks = Chunks(set, n);
    std::vector<std::vector<int>> tries = chunks;
    if (n > 2) {
      for (const auto& chunk : chunks) tries.push_back(Without(set, chunk));
    }
    int hit = eval.FirstFailing(tries, "ddmin");
    if (hit >= 0) {
      set = tries[hit];
      n = static_cast<size_t>(hit) < n ? 2 : std::max<size_t>(n - 1, 2);
      continue;
    }
    if (n >= set.size()) break;
    n = std::min(n * 2, set.size());
  }
  minimal = true;
  return set;
}

// Candidates hold the Constant nodes they read as initializers (the same tensors under the same
// names): a weight stays a weight and the result counts only the nodes that compute. When the
// whole model spelled that way passes, the failure is about the Constant nodes themselves, and
// they stay nodes.
void KeepConstantNodesIfTheFailureNeedsThem(Evaluator& eval, CandidateBuilder& builder,
                                            const io::Model& source, ReduceResult& result) {
  const auto& nodes = source.proto.graph().node();
  bool any = std::any_of(nodes.begin(), nodes.end(), IsWeightNode);
  if (!any || builder.topo_order().size() == static_cast<size_t>(nodes.size())) return;
  if (eval.Evaluate({builder.topo_order()}, "constants")[0]) return;
  builder.set_constants_as_initializers(false);
  result.constant_nodes_kept = true;
}

}  // namespace

nlohmann::json ReduceJson(const ReduceResult& result) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : result.steps) {
    steps.push_back({{"phase", s.phase},
                     {"candidate", s.candidate},
                     {"nodes", s.nodes},
                     {"failing", s.failing},
                     {"cached", s.cached},
                     {"seconds", s.seconds},
                     {"detail", s.detail}});
  }
  return {{"nodes_left", result.nodes.size()},
          {"nodes_searched", result.units},
          {"constant_nodes", result.constant_nodes_kept ? "kept" : "initializers"},
          {"nodes", result.node_names},
          {"minimal", result.minimal},
          {"interrupted", result.interrupted},
          {"invocations", result.invocations},
          {"bisect_invocations", result.bisect_invocations},
          {"cache_hits", result.cache_hits},
          {"subgraph_nodes_kept_whole", result.subgraph_nodes},
          {"seconds", result.seconds},
          {"steps", steps}};
}

ReduceResult Reduce(const io::Model& source, CandidateCheck& check, const ReduceOptions& options) {
  auto start = std::chrono::steady_clock::now();
  io::Model typed = source;
  runtime::CompleteShapes(typed, {});
  CandidateBuilder builder(source, &typed);
  const auto& order = builder.topo_order();
  if (order.empty()) ThrowUsage("the model has no nodes: nothing to reduce");
  io::CreateOutputDir(options.work_dir);
  ReduceResult result;
  result.units = order.size();
  for (const auto& node : source.proto.graph().node()) result.subgraph_nodes += HoldsSubgraph(node);
  Evaluator eval(check, options, builder, result);
  auto report = [&] {
    result.seconds = SecondsSince(start);
    result.node_names = builder.NodeNames(result.nodes);
    auto doc = ReduceJson(result);
    doc.update(options.report_extra);
    eval.WriteReport(doc);
  };
  try {
    int runs = check.deterministic() ? 1 : 2;
    auto originals = eval.EvaluateSource(source, order, runs);
    if (runs == 2 && originals[0] != originals[1]) {
      report();
      ThrowCheckFailed(
          "the check is flaky: on the original model it failed once and passed once; make it "
          "deterministic (fixed seeds, one thread) before reducing");
    }
    if (!originals[0]) {
      report();
      ThrowCheckFailed(
          "the check passes on the original model ({}): there is no failure to "
          "reduce",
          result.steps.front().detail);
    }
    if (options.known_good && eval.CheckFile(*options.known_good, "known-good")) {
      report();
      ThrowCheckFailed(
          "the check fails on the known-good model {} too: it cannot tell a failing "
          "model from a good one",
          options.known_good->string());
    }
    KeepConstantNodesIfTheFailureNeedsThem(eval, builder, source, result);
    std::vector<int> window = order;
    if (options.bisect && order.size() > 1) {
      int before = result.invocations;
      size_t end = ShortestFailingPrefix(eval, order, options.jobs);
      size_t begin = LatestFailingStart(eval, order, end, options.jobs);
      window = Positions(order, begin, end);
      result.bisect_invocations = result.invocations - before;
    }
    DeltaDebug(eval, window, result.minimal);
  } catch (const Interrupted&) {
    result.interrupted = true;
    result.minimal = false;
  }
  report();
  return result;
}

}  // namespace porttool::stages
