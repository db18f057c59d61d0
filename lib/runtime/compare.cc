#include "lib/runtime/compare.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include "lib/ir/dtype.h"
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

ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options) {
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
