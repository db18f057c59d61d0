#include "lib/runtime/compare.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/mman.h>
// sys/mman.h defines MAP_TYPE, an enumerator name in onnx/defs/parser.h; unused here, and in a
// unity batch it would break every later file that includes the parser.
#undef MAP_TYPE
#include <unistd.h>

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
  void Clear() {
    std::fill(bins_.begin(), bins_.end(), 0);
    count_ = zeros_ = 0;
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

// What comparing one tensor needs besides the two tensors: two chunks of values, two error
// histograms and a chunk of raw bytes (a reference read back from disk). A per-tensor comparison
// makes them once, before anything runs, and reuses them for every tensor: made per tensor in
// the middle of the run it watches, these blocks landed between the run's tensors, and the heap
// (never trimmed, see ProcessSettings) grew around them (+26 MB on PP-OCRv4 det at 960).
struct CompareScratch {
  static constexpr int64_t kChunk = 1 << 14;
  std::vector<double> a = std::vector<double>(kChunk), b = std::vector<double>(kChunk);
  ErrorHistogram abs_hist, rel_hist;
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

// The reference run's tensors while the candidate runs: one temporary file in `dir`, unlinked as
// soon as it is created so that it goes away with the process however that ends, written
// sequentially as the reference produces tensors and read back a block at a time. Memory is then
// one run's live tensors whatever the model; the disk holds what the two runs share.
// The file is written and read with direct I/O where the file system allows it, through one
// aligned block: buffered, the tensors would fill the page cache (memory for the machine, if not
// in this process's RSS), and on the VM we measured, buffered writes of 1.5 GB crawled at 50-120
// MB/s while direct ones ran at 950 MB/s.
class SpillFile {
 public:
  struct Entry {
    int32_t dtype = 0;
    std::vector<int64_t> shape;
    std::string text;  // the tensor's DebugString, for notes
    uint64_t offset = 0;
  };

  // `expected` tensors: the index is sized up front so that it does not grow between the
  // tensors of the run it records.
  SpillFile(const std::filesystem::path& dir, size_t expected)
      : dir_(dir.empty() ? std::filesystem::path(".") : dir), block_(MapBlock()) {
    entries_.reserve(expected);
    std::string pattern = (dir_ / "porttool-compare-XXXXXX").string();
    fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd_ < 0) {
      int error = errno;
      ::munmap(block_, kBlock);
      ThrowBadInput("cannot create a temporary file in '{}': {}", dir_.string(),
                    std::strerror(error));
    }
    ::unlink(pattern.c_str());
    SetDirect(true);  // best effort: file systems without direct I/O refuse, and stay buffered
  }
  ~SpillFile() {
    ::close(fd_);
    ::munmap(block_, kBlock);
  }
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends `value` unless a tensor of that name is already there (a tensor is produced once).
  void Put(const std::string& name, const Tensor& value) {
    if (entries_.count(name)) return;
    const uint64_t offset = written_ + filled_;
    const char* p = static_cast<const char*>(value.raw());
    for (size_t left = value.bytes(); left > 0;) {
      size_t n = std::min(left, kBlock - filled_);
      std::memcpy(block_ + filled_, p, n);
      filled_ += n;
      p += n;
      left -= n;
      if (filled_ == kBlock) WriteBlock(kBlock);
    }
    entries_[name] = {value.dtype(), value.shape(), value.DebugString(), offset};
  }

  // Writes what is still buffered (padded to the alignment direct I/O needs); call once, after
  // the last Put and before the first ReadAt.
  void Finish() {
    size_t padded = (filled_ + kAlign - 1) / kAlign * kAlign;
    std::memset(block_ + filled_, 0, padded - filled_);
    if (padded > 0) WriteBlock(padded);
  }

  const Entry* Find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // `bytes` bytes at `offset`, through the block (tensors are read in order, a chunk at a time).
  void ReadAt(uint64_t offset, char* out, size_t bytes) {
    while (bytes > 0) {
      if (offset < window_ || offset >= window_ + window_size_) LoadWindow(offset);
      size_t n = std::min<uint64_t>(bytes, window_ + window_size_ - offset);
      std::memcpy(out, block_ + (offset - window_), n);
      out += n;
      offset += n;
      bytes -= n;
    }
  }

 private:
  static constexpr size_t kAlign = 4096;  // what direct I/O needs of offsets and sizes
  static constexpr size_t kBlock = size_t{1} << 20;

  // The block is mapped, not taken from the heap: in the heap it sat where the run's first
  // tensors would go, and the never-trimmed heap grew around it (+1.6 MB RSS on det at 320).
  static char* MapBlock() {
    void* p = ::mmap(nullptr, kBlock, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ThrowBadInput("cannot map a {} buffer: {}", util::FormatBytes(kBlock), std::strerror(errno));
    }
    return static_cast<char*>(p);
  }

  void SetDirect(bool on) {
    int flags = ::fcntl(fd_, F_GETFL);
    direct_ = on && flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
    if (!direct_ && flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
  }

  // A full disk is the likely failure: say where and how much was written, so the user can make
  // room or point the temporary directory elsewhere.
  void WriteBlock(size_t bytes) {
    for (size_t done = 0; done < bytes;) {
      ssize_t n = ::pwrite(fd_, block_ + done, bytes - done, static_cast<off_t>(written_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && direct_) {  // direct I/O accepted, then refused
        SetDirect(false);
        continue;
      }
      if (n <= 0) {
        ThrowBadInput(
            "cannot write the reference run's tensors to a temporary file in '{}' after {}: {}; "
            "free space there or use another temporary directory",
            dir_.string(), util::FormatBytes(written_ + done),
            n < 0 ? std::strerror(errno) : "nothing written");
      }
      done += static_cast<size_t>(n);
    }
    written_ += bytes;
    filled_ = 0;
  }

  // Reads the block that starts at `offset` rounded down to the alignment.
  void LoadWindow(uint64_t offset) {
    window_ = offset / kAlign * kAlign;
    window_size_ = 0;
    while (window_size_ < kBlock) {
      ssize_t n = ::pread(fd_, block_ + window_size_, kBlock - window_size_,
                          static_cast<off_t>(window_ + window_size_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && direct_) {
        SetDirect(false);
        continue;
      }
      if (n < 0) {
        ThrowBadInput(
            "cannot read back the reference run's tensors from a temporary file in "
            "'{}': {}",
            dir_.string(), std::strerror(errno));
      }
      if (n == 0) break;  // the end of the file
      window_size_ += static_cast<size_t>(n);
    }
    if (offset >= window_ + window_size_) {
      ThrowInternal("the temporary file in '{}' ends at {} bytes, before offset {}", dir_.string(),
                    window_ + window_size_, offset);
    }
  }

  std::filesystem::path dir_;
  char* block_;  // kBlock bytes, page-aligned
  int fd_ = -1;
  bool direct_ = false;
  size_t filled_ = 0;     // bytes in block_ not written yet
  uint64_t written_ = 0;  // bytes in the file
  uint64_t window_ = 0;   // while reading: the file offset block_ holds, and how many bytes
  size_t window_size_ = 0;
  std::unordered_map<std::string, Entry> entries_;
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

// Fills `v` with `count` reference values from element `begin` on.
using ChunkSource = std::function<void(int64_t begin, int64_t count, double* v)>;

// The statistics of `candidate` against a reference of `shape` (described by `text`) whose
// values come a chunk at a time from `reference`: it need not be in memory as a whole.
TensorStats CompareAgainst(const std::vector<int64_t>& shape, const std::string& text,
                           const ChunkSource& reference, const Tensor& candidate, double rtol,
                           double atol, CompareScratch& scratch) {
  TensorStats s;
  if (shape != candidate.shape()) {
    s.comparable = s.within_tolerance = false;
    s.note = fmt::format("shape differs: {} vs {}", text, candidate.DebugString());
    return s;
  }
  s.count = candidate.size();
  double dot = 0, na = 0, nb = 0, noise = 0, sum_abs = 0, sum_rel = 0;
  int64_t finite = 0;
  ErrorHistogram &abs_hist = scratch.abs_hist, &rel_hist = scratch.rel_hist;
  abs_hist.Clear();
  rel_hist.Clear();
  constexpr int64_t kChunk = CompareScratch::kChunk;
  std::vector<double>& a = scratch.a;
  std::vector<double>& b = scratch.b;
  for (int64_t i = 0; i < s.count; ++i) {
    if (i % kChunk == 0) {
      int64_t n = std::min(kChunk, s.count - i);
      reference(i, n, a.data());
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
