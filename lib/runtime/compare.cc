#include "lib/runtime/compare.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "lib/ir/dtype.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

// Elements [begin, begin + count) of `t` as doubles: comparisons convert a chunk at a time so
// that comparing a large tensor costs no more than a few fixed buffers.
void ChunkAsDoubles(const Tensor& t, int64_t begin, int64_t count, double* v) {
  auto copy = [&](const auto* p) {
    for (int64_t i = 0; i < count; ++i) v[i] = static_cast<double>(p[begin + i]);
  };
  switch (t.dtype()) {
    case TP::FLOAT:
      copy(t.data<float>());
      break;
    case TP::DOUBLE:
      copy(t.data<double>());
      break;
    case TP::INT8:
      copy(t.data<int8_t>());
      break;
    case TP::UINT8:
      copy(t.data<uint8_t>());
      break;
    case TP::INT16:
      copy(t.data<int16_t>());
      break;
    case TP::UINT16:
      copy(t.data<uint16_t>());
      break;
    case TP::INT32:
      copy(t.data<int32_t>());
      break;
    case TP::UINT32:
      copy(t.data<uint32_t>());
      break;
    case TP::INT64:
      copy(t.data<int64_t>());
      break;
    case TP::UINT64:
      copy(t.data<uint64_t>());
      break;
    case TP::BOOL:
      copy(t.data<bool>());
      break;
    default:
      ThrowBadInput("cannot compare {} tensors", ir::DtypeName(t.dtype()));
  }
}

// The median of non-negative errors without keeping them: exact zeros apart, the rest in
// log-spaced bins (kPerDecade per decade from 1e-30 to 1e30), so the median is exact for zero and
// within 0.6% otherwise, in constant memory.
class ErrorHistogram {
 public:
  ErrorHistogram() : bins_(kDecades * kPerDecade, 0) {}
  void Add(double v) {
    ++count_;
    if (v == 0) {
      ++zeros_;
      return;
    }
    double pos = (std::log10(v) + kDecades / 2.0) * kPerDecade;
    bins_[static_cast<size_t>(std::clamp(pos, 0.0, double(bins_.size() - 1)))]++;
  }
  // The element at index count/2 of the sorted errors (as std::nth_element would pick).
  double Median() const {
    if (count_ == 0) return 0;
    int64_t rank = count_ / 2;
    if (rank < zeros_) return 0;
    rank -= zeros_;
    for (size_t b = 0; b < bins_.size(); ++b) {
      if (rank < bins_[b]) return std::pow(10.0, (b + 0.5) / kPerDecade - kDecades / 2.0);
      rank -= bins_[b];
    }
    return 0;
  }

 private:
  static constexpr int kDecades = 60;
  static constexpr int kPerDecade = 400;
  std::vector<int64_t> bins_;
  int64_t count_ = 0;
  int64_t zeros_ = 0;
};

// Builds the sessions' input maps: each model gets the inputs it declares.
TensorMap InputsFor(const Session& session, const TensorMap& all) {
  TensorMap mine;
  for (const auto& spec : session.inputs()) {
    auto it = all.find(spec.name);
    if (it != all.end()) mine[spec.name] = it->second;
  }
  return mine;
}

// A fresh directory under `parent` for one comparison, removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::filesystem::path& parent) {
    std::filesystem::path base = parent.empty() ? std::filesystem::path(".") : parent;
    std::string pattern = (base / "porttool-compare-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      ThrowBadInput("cannot create a scratch directory in '{}': {}", base.string(),
                    std::strerror(errno));
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Hands the reference run's tensors to the candidate run while both execute (A on a worker
// thread, B on the caller's). A tensor is passed by sharing its storage, not copied, and A waits
// while what B has not taken yet exceeds the budget, so A stays a step or two ahead and memory
// is the two runs' live tensors plus at most `budget` bytes. When the two execution orders
// differ and B waits for a tensor A has not produced yet, A must go on: what it produces meanwhile
// beyond the budget is spilled to a scratch directory and read back when B asks for it. Nothing
// waits on a condition the other side cannot change, so the pair cannot deadlock.
class Handoff {
 public:
  Handoff(size_t budget, std::filesystem::path scratch_parent)
      : budget_(budget), scratch_parent_(std::move(scratch_parent)) {}

  // A's side: offers a tensor B will ask for.
  void Offer(const std::string& name, const Tensor& value) {
    std::vector<Tensor> returned;  // freed here, by the thread that allocated them
    std::unique_lock<std::mutex> lock(mutex_);
    returned.swap(returned_);
    changed_.wait(
        lock, [&] { return b_done_ || BlockedOnA() || held_bytes_ + value.bytes() <= budget_; });
    if (b_done_) return;
    if (name == wanted_ || held_bytes_ + value.bytes() <= budget_) {
      held_bytes_ += value.bytes();
      held_[name] = value;
    } else {
      if (!scratch_) scratch_ = std::make_unique<ScratchDir>(scratch_parent_);
      std::filesystem::path file = scratch_->path() / fmt::format("{:06d}.npy", spill_count_++);
      WriteNpy(file, value);
      spilled_[name] = file;
    }
    changed_.notify_all();
  }

  // A's side: no more tensors (or A failed with `error`).
  void FinishA(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    a_done_ = true;
    a_error_ = error;
    changed_.notify_all();
  }

  // B's side: the reference's `name`, waiting until A produces it; nullopt when A finished
  // without producing it. Rethrows A's failure.
  std::optional<Tensor> Take(const std::string& name) {
    std::unique_lock<std::mutex> lock(mutex_);
    wanted_ = name;
    changed_.notify_all();
    changed_.wait(lock, [&] { return held_.count(name) || spilled_.count(name) || a_done_; });
    wanted_.clear();
    if (a_error_) std::rethrow_exception(a_error_);
    if (auto it = held_.find(name); it != held_.end()) {
      Tensor t = std::move(it->second);
      held_.erase(it);
      held_bytes_ -= t.bytes();
      changed_.notify_all();
      return t;
    }
    if (auto it = spilled_.find(name); it != spilled_.end()) {
      std::filesystem::path file = it->second;
      spilled_.erase(it);
      lock.unlock();
      Tensor t = ReadNpy(file);
      std::error_code ec;
      std::filesystem::remove(file, ec);
      return t;
    }
    return std::nullopt;
  }

  // B's side: a reference tensor B is done with goes back to A's thread to be freed there, so
  // the blocks A allocates return to A's own heap arena and A's next tensors reuse them.
  void Return(Tensor t) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!a_done_) returned_.push_back(std::move(t));
  }

  // B's side: B needs nothing more (finished or failed); A runs on without waiting.
  void FinishB() {
    std::lock_guard<std::mutex> lock(mutex_);
    b_done_ = true;
    held_.clear();
    held_bytes_ = 0;
    changed_.notify_all();
  }

  std::exception_ptr a_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return a_error_;
  }

 private:
  // B waits for a tensor A has not handed over yet.
  bool BlockedOnA() const {
    return !wanted_.empty() && !held_.count(wanted_) && !spilled_.count(wanted_);
  }

  const size_t budget_;
  const std::filesystem::path scratch_parent_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, Tensor> held_;
  size_t held_bytes_ = 0;
  std::vector<Tensor> returned_;
  std::unordered_map<std::string, std::filesystem::path> spilled_;
  int64_t spill_count_ = 0;
  std::unique_ptr<ScratchDir> scratch_;
  std::string wanted_;  // what B waits for; empty while B runs
  bool a_done_ = false;
  bool b_done_ = false;
  std::exception_ptr a_error_;
};

// Names the main-graph nodes of `model` produce, Constant nodes apart (those are weights, not
// results worth comparing).
std::set<std::string> ProducedNames(const io::Model& model) {
  std::set<std::string> names;
  for (const auto& n : model.proto.graph().node()) {
    if (n.op_type() == "Constant") continue;
    for (const auto& out : n.output()) {
      if (!out.empty()) names.insert(out);
    }
  }
  return names;
}

}  // namespace

TensorStats CompareTensors(const Tensor& reference, const Tensor& candidate, double rtol,
                           double atol) {
  TensorStats s;
  if (reference.shape() != candidate.shape()) {
    s.comparable = s.within_tolerance = false;
    s.note =
        fmt::format("shape differs: {} vs {}", reference.DebugString(), candidate.DebugString());
    return s;
  }
  s.count = reference.size();
  double dot = 0, na = 0, nb = 0, noise = 0, sum_abs = 0, sum_rel = 0;
  int64_t finite = 0;
  ErrorHistogram abs_hist, rel_hist;
  constexpr int64_t kChunk = 1 << 14;
  std::vector<double> a(kChunk), b(kChunk);
  for (int64_t i = 0; i < s.count; ++i) {
    if (i % kChunk == 0) {
      int64_t n = std::min(kChunk, s.count - i);
      ChunkAsDoubles(reference, i, n, a.data());
      ChunkAsDoubles(candidate, i, n, b.data());
    }
    double x = a[i % kChunk], y = b[i % kChunk];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        s.within_tolerance = false;
        s.max_abs = s.max_rel = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    double d = x == y ? 0 : std::abs(y - x);  // inf == inf counts as equal
    double r = d / std::max(std::abs(x), 1e-6);
    s.max_abs = std::max(s.max_abs, d);
    s.max_rel = std::max(s.max_rel, r);
    if (!(d <= atol + rtol * std::abs(x))) s.within_tolerance = false;
    if (std::isfinite(d)) {
      dot += x * y;
      na += x * x;
      nb += y * y;
      noise += d * d;
      sum_abs += d;
      sum_rel += r;
      ++finite;
      abs_hist.Add(d);
      rel_hist.Add(r);
    }
  }
  s.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  s.sqnr_db = noise == 0 ? std::numeric_limits<double>::infinity()
                         : 10.0 * std::log10(std::max(na, 1e-300) / noise);
  s.mean_abs = finite ? sum_abs / double(finite) : 0;
  s.mean_rel = finite ? sum_rel / double(finite) : 0;
  s.median_abs = abs_hist.Median();
  s.median_rel = rel_hist.Median();
  return s;
}

const Tolerance& CompareOptions::For(const std::string& name) const {
  auto it = per_output.find(name);
  return it == per_output.end() ? tolerance : it->second;
}

void RecordRun(const io::Model& model, const TensorMap& inputs, const SessionOptions& session,
               const std::function<bool(const std::string&)>& keep, TensorStore& store) {
  Session run(model, session);
  TensorMap mine = InputsFor(run, inputs);
  for (const auto& spec : run.inputs()) {
    if (auto it = mine.find(spec.name); it != mine.end()) store.Put(spec.name, "input", it->second);
  }
  std::set<std::string> outputs, constants;
  for (const auto& o : model.proto.graph().output()) outputs.insert(o.name());
  for (const auto& n : model.proto.graph().node()) {
    if (n.op_type() == "Constant") constants.insert(n.output().begin(), n.output().end());
  }
  // Written as produced: the session frees each tensor after its last use, so nothing piles up.
  Observer record = [&](const std::string& name, const Tensor& value) {
    if (outputs.count(name)) {
      store.Put(name, "output", value);
    } else if (keep && !constants.count(name) && keep(name)) {
      store.Put(name, "intermediate", value);
    }
  };
  for (const auto& out : run.Run(mine, record)) store.Put(out.name, "output", out.value);
  store.Finish();
}

ModelComparison CompareWithStore(const io::Model& candidate, const TensorMap& inputs,
                                 const TensorStore& reference, const CompareOptions& options) {
  std::map<std::string, std::pair<std::string, std::string>> producer;  // tensor -> node, op
  for (const auto& n : candidate.proto.graph().node()) {
    for (const auto& out : n.output()) producer[out] = {n.name(), n.op_type()};
  }
  auto compare = [&](const StoredTensor& ref, const std::string& name, const Tensor& value) {
    const Tolerance& tol = options.For(name);
    auto [node, op] = producer[name];
    return TensorComparison{name, node, op,
                            CompareTensors(reference.Read(ref), value, tol.rtol, tol.atol)};
  };
  ModelComparison result;
  Observer per_tensor = [&](const std::string& name, const Tensor& value) {
    const StoredTensor* ref = reference.Find(name);
    if (!ref || ref->role == "input" || producer[name].second == "Constant") return;
    result.intermediates.push_back(compare(*ref, name, value));
    if (!result.first_divergent && !result.intermediates.back().stats.within_tolerance) {
      result.first_divergent = result.intermediates.size() - 1;
    }
  };
  SessionOptions session = options.session;
  if (options.kernels_b) session.registry = options.kernels_b;
  Session run(candidate, session);
  auto outputs = run.Run(InputsFor(run, inputs), options.per_tensor ? per_tensor : Observer());
  for (const auto& ref : reference.entries()) {
    if (ref.role != "output") continue;
    auto it = std::find_if(outputs.begin(), outputs.end(),
                           [&](const NamedTensor& o) { return o.name == ref.name; });
    if (it == outputs.end()) {
      result.unmatched_outputs.push_back(ref.name);
      result.within_tolerance = false;
      continue;
    }
    result.outputs.push_back(compare(ref, ref.name, it->value));
    if (!result.outputs.back().stats.within_tolerance) result.within_tolerance = false;
  }
  return result;
}

namespace {

// Per-tensor comparison with A and B in lockstep (see Handoff): neither run's intermediates are
// written anywhere unless the two execution orders drift apart by more than the budget.
ModelComparison CompareInLockstep(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                                  const CompareOptions& options) {
  std::set<std::string> shared;
  {
    std::set<std::string> a_names = ProducedNames(a), b_names = ProducedNames(b);
    std::set_intersection(a_names.begin(), a_names.end(), b_names.begin(), b_names.end(),
                          std::inserter(shared, shared.end()));
  }
  std::map<std::string, std::pair<std::string, std::string>> producer;  // tensor -> node, op
  for (const auto& n : b.proto.graph().node()) {
    for (const auto& out : n.output()) producer[out] = {n.name(), n.op_type()};
  }
  // Both sessions are planned before anything runs, so an op without a kernel is reported
  // (reference first) the way it is without --per-tensor.
  Session run_a(a, options.session);
  SessionOptions session_b = options.session;
  if (options.kernels_b) session_b.registry = options.kernels_b;
  Session run_b(b, session_b);
  TensorMap inputs_a = InputsFor(run_a, inputs), inputs_b = InputsFor(run_b, inputs);

  Handoff handoff(options.lockstep_budget, options.scratch_dir);
  std::vector<NamedTensor> outputs_a;
  std::thread reference([&] {
    try {
      outputs_a = run_a.Run(inputs_a, [&](const std::string& name, const Tensor& value) {
        if (shared.count(name)) handoff.Offer(name, value);
      });
      handoff.FinishA(nullptr);
    } catch (...) {
      handoff.FinishA(std::current_exception());
    }
  });

  ModelComparison result;
  std::vector<NamedTensor> outputs_b;
  std::exception_ptr b_error;
  try {
    outputs_b = run_b.Run(inputs_b, [&](const std::string& name, const Tensor& value) {
      if (!shared.count(name)) return;
      std::optional<Tensor> ref = handoff.Take(name);
      if (!ref) return;
      const Tolerance& tol = options.For(name);
      auto [node, op] = producer[name];
      result.intermediates.push_back(
          {name, node, op, CompareTensors(*ref, value, tol.rtol, tol.atol)});
      handoff.Return(std::move(*ref));
      if (!result.first_divergent && !result.intermediates.back().stats.within_tolerance) {
        result.first_divergent = result.intermediates.size() - 1;
      }
    });
  } catch (...) {
    b_error = std::current_exception();
  }
  handoff.FinishB();
  reference.join();
  // The reference's failure comes first: B may only have stopped because A did.
  if (auto a_error = handoff.a_error()) std::rethrow_exception(a_error);
  if (b_error) std::rethrow_exception(b_error);

  for (const auto& ref : outputs_a) {
    auto it = std::find_if(outputs_b.begin(), outputs_b.end(),
                           [&](const NamedTensor& o) { return o.name == ref.name; });
    if (it == outputs_b.end()) {
      result.unmatched_outputs.push_back(ref.name);
      result.within_tolerance = false;
      continue;
    }
    const Tolerance& tol = options.For(ref.name);
    auto [node, op] = producer[ref.name];
    result.outputs.push_back(
        {ref.name, node, op, CompareTensors(ref.value, it->value, tol.rtol, tol.atol)});
    if (!result.outputs.back().stats.within_tolerance) result.within_tolerance = false;
  }
  return result;
}

}  // namespace

ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options) {
  if (options.per_tensor) return CompareInLockstep(a, b, inputs, options);
  ScratchDir scratch(options.scratch_dir);
  TensorStore store = TensorStore::Create(scratch.path());
  // Only tensors B also produces are worth writing.
  std::set<std::string> b_produces;
  for (const auto& n : b.proto.graph().node()) {
    b_produces.insert(n.output().begin(), n.output().end());
  }
  std::function<bool(const std::string&)> keep;
  if (options.per_tensor)
    keep = [&](const std::string& name) { return b_produces.count(name) > 0; };
  RecordRun(a, inputs, options.session, keep, store);
  return CompareWithStore(b, inputs, store, options);
}

ValueStats SummarizeValues(const Tensor& tensor) {
  ValueStats s;
  double sum = 0;
  int64_t finite = 0;
  constexpr int64_t kChunk = 4096;
  std::vector<double> chunk(kChunk);
  for (int64_t begin = 0; begin < tensor.size(); begin += kChunk) {
    int64_t n = std::min(kChunk, tensor.size() - begin);
    ChunkAsDoubles(tensor, begin, n, chunk.data());
    for (int64_t i = 0; i < n; ++i) {
      double v = chunk[i];
      if (std::isnan(v)) {
        ++s.nan_count;
      } else if (std::isinf(v)) {
        ++s.inf_count;
      } else {
        s.min = finite ? std::min(s.min, v) : v;
        s.max = finite ? std::max(s.max, v) : v;
        sum += v;
        ++finite;
      }
    }
  }
  s.mean = finite ? sum / static_cast<double>(finite) : 0;
  return s;
}

}  // namespace porttool::runtime
