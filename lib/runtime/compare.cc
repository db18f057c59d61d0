#include "lib/runtime/compare.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <unordered_map>

#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/spill_file.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

// `count` elements of `dtype` at `data` as doubles: comparisons convert a chunk at a time so that
// comparing a large tensor costs no more than a few fixed buffers, wherever its values live.
void ToDoubles(int32_t dtype, const void* data, int64_t count, double* v) {
  auto copy = [&](const auto* p) {
    for (int64_t i = 0; i < count; ++i) v[i] = static_cast<double>(p[i]);
  };
  switch (dtype) {
    case TP::FLOAT:
      copy(static_cast<const float*>(data));
      break;
    case TP::DOUBLE:
      copy(static_cast<const double*>(data));
      break;
    case TP::INT8:
      copy(static_cast<const int8_t*>(data));
      break;
    case TP::UINT8:
      copy(static_cast<const uint8_t*>(data));
      break;
    case TP::INT16:
      copy(static_cast<const int16_t*>(data));
      break;
    case TP::UINT16:
      copy(static_cast<const uint16_t*>(data));
      break;
    case TP::INT32:
      copy(static_cast<const int32_t*>(data));
      break;
    case TP::UINT32:
      copy(static_cast<const uint32_t*>(data));
      break;
    case TP::INT64:
      copy(static_cast<const int64_t*>(data));
      break;
    case TP::UINT64:
      copy(static_cast<const uint64_t*>(data));
      break;
    case TP::BOOL:
      copy(static_cast<const bool*>(data));
      break;
    default:
      ThrowBadInput("cannot compare {} tensors", ir::DtypeName(dtype));
  }
}

// Elements [begin, begin + count) of `t` as doubles.
void ChunkAsDoubles(const Tensor& t, int64_t begin, int64_t count, double* v) {
  const char* base = static_cast<const char*>(t.raw());
  ToDoubles(t.dtype(), base + begin * static_cast<int64_t>(ir::DtypeSize(t.dtype())), count, v);
}

// What comparing one tensor needs besides the two tensors: two chunks of values, two error
// histograms and a chunk of raw bytes (a reference read back from disk). A per-tensor comparison
// makes them once, before anything runs, and reuses them for every tensor: made per tensor in
// the middle of the run it watches, these blocks landed between the run's tensors, and the heap
// (never trimmed, see ProcessSettings) grew around them (+26 MB on PP-OCRv4 det at 960).
struct CompareScratch {
  static constexpr int64_t kChunk = 1 << 14;
  std::vector<double> a = std::vector<double>(kChunk), b = std::vector<double>(kChunk);
  StatsAccumulator stats;
  std::vector<char> bytes = std::vector<char>(kChunk * sizeof(double));  // widest comparable dtype
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

// Tensor name -> (node, op) of the node of `model` that produces it.
std::map<std::string, std::pair<std::string, std::string>> Producers(const io::Model& model) {
  std::map<std::string, std::pair<std::string, std::string>> producer;
  const auto& graph = model.proto.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    for (const auto& out : n.output()) producer[out] = {ir::NodeLabel(n, i), n.op_type()};
  }
  return producer;
}

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

namespace {

// The statistics of `candidate` against a reference of `shape` (described by `text`) whose
// values come a chunk at a time from `reference`: it need not be in memory as a whole.
TensorStats CompareAgainst(const std::vector<int64_t>& shape, const std::string& text,
                           const ChunkSource& reference, const Tensor& candidate, double rtol,
                           double atol, CompareScratch& scratch) {
  StatsAccumulator& acc = scratch.stats;
  acc.Clear();
  if (shape != candidate.shape()) {
    acc.MarkIncomparable(fmt::format("shape differs: {} vs {}", text, candidate.DebugString()));
    return acc.Stats();
  }
  Tolerance tolerance;
  tolerance.rtol = rtol;
  tolerance.atol = atol;
  acc.Add(candidate.size(), reference, ChunksOf(candidate), tolerance, scratch.a, scratch.b);
  return acc.Stats();
}

// `candidate` against the reference's copy in `spill`, read back a chunk at a time.
TensorStats CompareWithSpilled(SpillFile& spill, const SpillFile::Entry& reference,
                               const Tensor& candidate, const Tolerance& tol,
                               CompareScratch& scratch) {
  const size_t element = ir::DtypeSize(reference.dtype);
  ChunkSource read = [&](int64_t begin, int64_t count, double* v) {
    scratch.bytes.resize(static_cast<size_t>(count) * element);  // within capacity: no allocation
    spill.ReadAt(reference.offset + static_cast<uint64_t>(begin) * element, scratch.bytes.data(),
                 scratch.bytes.size());
    ToDoubles(reference.dtype, scratch.bytes.data(), count, v);
  };
  return CompareAgainst(reference.shape, reference.text, read, candidate, tol.rtol, tol.atol,
                        scratch);
}

}  // namespace

ChunkSource ChunksOf(const Tensor& t) {
  return [&t](int64_t begin, int64_t count, double* v) { ChunkAsDoubles(t, begin, count, v); };
}

ErrorHistogram::ErrorHistogram(int per_decade, bool preallocate) : per_decade_(per_decade) {
  if (preallocate) bins_.assign(static_cast<size_t>(kDecades) * per_decade_, 0);
}

void ErrorHistogram::Add(double v) {
  ++count_;
  if (v == 0) {
    ++zeros_;
    return;
  }
  const double top = double(kDecades) * per_decade_ - 1;
  const auto bin =
      static_cast<int64_t>(std::clamp((std::log10(v) + kDecades / 2.0) * per_decade_, 0.0, top));
  if (bins_.empty()) {
    lo_ = bin;
    bins_.assign(1, 0);
  } else if (bin < lo_) {
    bins_.insert(bins_.begin(), static_cast<size_t>(lo_ - bin), 0);
    lo_ = bin;
  } else if (bin >= lo_ + static_cast<int64_t>(bins_.size())) {
    bins_.resize(static_cast<size_t>(bin - lo_ + 1), 0);
  }
  bins_[static_cast<size_t>(bin - lo_)]++;
}

void ErrorHistogram::Clear() {
  std::fill(bins_.begin(), bins_.end(), 0);
  count_ = zeros_ = 0;
}

double ErrorHistogram::Median() const {
  if (count_ == 0) return 0;
  int64_t rank = count_ / 2;
  if (rank < zeros_) return 0;
  rank -= zeros_;
  for (size_t b = 0; b < bins_.size(); ++b) {
    if (rank < bins_[b]) {
      return std::pow(10.0, (double(lo_ + int64_t(b)) + 0.5) / per_decade_ - kDecades / 2.0);
    }
    rank -= bins_[b];
  }
  return 0;
}

StatsAccumulator::StatsAccumulator(int per_decade, bool preallocate)
    : abs_hist_(per_decade, preallocate), rel_hist_(per_decade, preallocate) {}

void StatsAccumulator::Clear() {
  s_ = TensorStats();
  dot_ = na_ = nb_ = noise_ = sum_abs_ = sum_rel_ = 0;
  finite_ = 0;
  abs_hist_.Clear();
  rel_hist_.Clear();
}

void StatsAccumulator::MarkIncomparable(const std::string& note) {
  if (!s_.comparable) return;
  s_.comparable = s_.within_tolerance = false;
  s_.note = note;
}

void StatsAccumulator::Add(int64_t count, const ChunkSource& reference,
                           const ChunkSource& candidate, const Tolerance& tolerance,
                           std::vector<double>& a, std::vector<double>& b) {
  const double rtol = tolerance.rtol, atol = tolerance.atol;
  const auto chunk = static_cast<int64_t>(std::min(a.size(), b.size()));
  s_.count += count;
  for (int64_t i = 0; i < count; ++i) {
    if (i % chunk == 0) {
      int64_t n = std::min(chunk, count - i);
      reference(i, n, a.data());
      candidate(i, n, b.data());
    }
    double x = a[i % chunk], y = b[i % chunk];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        s_.within_tolerance = false;
        s_.max_abs = s_.max_rel = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    double d = x == y ? 0 : std::abs(y - x);  // inf == inf counts as equal
    double r = d / std::max(std::abs(x), 1e-6);
    s_.max_abs = std::max(s_.max_abs, d);
    s_.max_rel = std::max(s_.max_rel, r);
    if (!(d <= atol + rtol * std::abs(x))) s_.within_tolerance = false;
    if (std::isfinite(d)) {
      dot_ += x * y;
      na_ += x * x;
      nb_ += y * y;
      noise_ += d * d;
      sum_abs_ += d;
      sum_rel_ += r;
      ++finite_;
      abs_hist_.Add(d);
      rel_hist_.Add(r);
    }
  }
}

TensorStats StatsAccumulator::Stats() const {
  TensorStats s = s_;
  if (!s.comparable) return s;
  s.cosine = (na_ == 0 && nb_ == 0)   ? 1.0
             : (na_ == 0 || nb_ == 0) ? 0.0
                                      : dot_ / std::sqrt(na_ * nb_);
  s.sqnr_db = noise_ == 0 ? std::numeric_limits<double>::infinity()
                          : 10.0 * std::log10(std::max(na_, 1e-300) / noise_);
  s.mean_abs = finite_ ? sum_abs_ / double(finite_) : 0;
  s.mean_rel = finite_ ? sum_rel_ / double(finite_) : 0;
  s.median_abs = abs_hist_.Median();
  s.median_rel = rel_hist_.Median();
  return s;
}

TensorStats CompareTensors(const Tensor& reference, const Tensor& candidate, double rtol,
                           double atol) {
  ChunkSource read = [&](int64_t begin, int64_t count, double* v) {
    ChunkAsDoubles(reference, begin, count, v);
  };
  CompareScratch scratch;
  return CompareAgainst(reference.shape(), reference.DebugString(), read, candidate, rtol, atol,
                        scratch);
}

const Tolerance& CompareOptions::For(const std::string& name) const {
  auto it = per_output.find(name);
  return it == per_output.end() ? tolerance : it->second;
}

SessionOptions CompareOptions::CandidateSession() const {
  SessionOptions candidate = session_b.value_or(session);
  if (kernels_b) candidate.registry = kernels_b;
  return candidate;
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
  auto producer = Producers(candidate);
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
  Session run(candidate, options.CandidateSession());
  auto outputs = run.Run(InputsFor(run, inputs), options.per_tensor ? per_tensor : Observer());
  result.float16_overflows = run.float16_overflows();
  result.float16_kept_float64 = run.float16_kept_float64();
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

// Runs the reference and writes to `spill` every tensor in `shared` as it is produced (the
// session frees each after its last use, so nothing piles up), then its outputs. Returns the
// output names in declaration order; the outputs themselves are freed before the candidate runs.
std::vector<std::string> RecordReference(Session& run, const TensorMap& inputs,
                                         const std::set<std::string>& shared, SpillFile& spill) {
  auto outputs = run.Run(inputs, [&](const std::string& name, const Tensor& value) {
    if (shared.count(name)) spill.Put(name, value);
  });
  std::vector<std::string> names;
  for (const auto& out : outputs) {
    spill.Put(out.name, out.value);
    names.push_back(out.name);
  }
  spill.Finish();
  return names;
}

// Per-tensor comparison, one run after the other: A's tensors go to a temporary file as A
// produces them, then B runs and each tensor it produces is compared with A's copy read back a
// chunk at a time. Running the two side by side held both runs' live tensors at once (2.3x one
// run's on PP-OCRv4 det); this way memory is one run's, in any execution orders, for the price
// of writing and reading what the two runs share once.
ModelComparison CompareThroughSpill(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                                    const CompareOptions& options) {
  // B's name for each of A's tensors: the same name unless options.names_b says otherwise.
  const bool mapped = !options.names_b.empty();
  auto name_b = [&](const std::string& name_a) -> std::string {
    if (!mapped) return name_a;
    auto it = options.names_b.find(name_a);
    return it == options.names_b.end() ? std::string() : it->second;
  };
  std::map<std::string, std::string> name_a;  // B's name -> A's, for the mapped tensors
  for (const auto& [x, y] : options.names_b) name_a.emplace(y, x);
  std::set<std::string> shared;  // A's names
  if (options.per_tensor) {
    std::set<std::string> b_names = ProducedNames(b);
    for (const auto& x : ProducedNames(a)) {
      if (b_names.count(name_b(x))) shared.insert(x);
    }
  }
  auto producer = Producers(b);
  // Both sessions are planned before anything runs, so an op without a kernel is reported
  // (reference first) the way it is without --per-tensor.
  Session run_a(a, options.session);
  Session run_b(b, options.CandidateSession());

  CompareScratch scratch;
  ModelComparison result;
  result.intermediates.reserve(shared.size());
  SpillFile spill(options.scratch_dir, shared.size());
  std::vector<std::string> outputs_a =
      RecordReference(run_a, InputsFor(run_a, inputs), shared, spill);
  auto compare = [&](const std::string& name, const SpillFile::Entry& ref, const Tensor& value) {
    auto [node, op] = producer[name];
    return TensorComparison{name, node, op,
                            CompareWithSpilled(spill, ref, value, options.For(name), scratch)};
  };
  auto outputs_b =
      run_b.Run(InputsFor(run_b, inputs), [&](const std::string& name, const Tensor& value) {
        std::string x = name;
        if (mapped) {
          auto it = name_a.find(name);
          if (it == name_a.end()) return;
          x = it->second;
        }
        const SpillFile::Entry* ref = shared.count(x) ? spill.Find(x) : nullptr;
        if (!ref) return;
        result.intermediates.push_back(compare(name, *ref, value));
        if (!result.first_divergent && !result.intermediates.back().stats.within_tolerance) {
          result.first_divergent = result.intermediates.size() - 1;
        }
      });
  result.float16_overflows = run_b.float16_overflows();
  result.float16_kept_float64 = run_b.float16_kept_float64();
  for (const auto& name : outputs_a) {
    const std::string wanted = name_b(name);
    auto it = std::find_if(outputs_b.begin(), outputs_b.end(),
                           [&](const NamedTensor& o) { return o.name == wanted; });
    if (wanted.empty() || it == outputs_b.end()) {
      result.unmatched_outputs.push_back(name);
      result.within_tolerance = false;
      continue;
    }
    result.outputs.push_back(compare(wanted, *spill.Find(name), it->value));
    if (!result.outputs.back().stats.within_tolerance) result.within_tolerance = false;
  }
  return result;
}

}  // namespace

ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options) {
  if (options.per_tensor || !options.names_b.empty()) {
    return CompareThroughSpill(a, b, inputs, options);
  }
  ScratchDir scratch(options.scratch_dir);
  TensorStore store = TensorStore::Create(scratch.path());
  RecordRun(a, inputs, options.session, nullptr, store);
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
