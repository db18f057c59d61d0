// Numerical comparison of tensors and of two models run on the same inputs: max, mean and median
// abs and relative error, cosine similarity and SQNR (dB), and a tolerance test in numpy.allclose
// form (tolerances per output). Per-tensor comparison of two models runs the reference first and
// writes the tensors both models produce to a temporary file as it goes, then runs the candidate
// and compares each tensor as it is produced against the reference's copy, read back a chunk at a
// time: memory is one run's live tensors whatever the model's size (the disk holds the shared
// tensors meanwhile), and the first divergent tensor is found in the candidate's topological
// order. A reference can also be recorded into a TensorStore (a directory of .npy files) and
// compared later, or elsewhere (a board, another runtime), one tensor at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/tensor_store.h"

namespace porttool::runtime {

struct TensorStats {
  bool comparable = true;  // false when dtype class or shape differ (see note)
  std::string note;
  int64_t count = 0;
  double max_abs = 0;     // max |b - a|
  double max_rel = 0;     // max |b - a| / max(|a|, 1e-6)
  double mean_abs = 0;    // over the finite differences
  double median_abs = 0;  // within 0.6% (log-binned, constant memory); exact when 0
  double mean_rel = 0;
  double median_rel = 0;
  double cosine = 1;             // a·b / (|a| |b|); 1 when both are all zero
  double sqnr_db = 0;            // 10 log10(sum a^2 / sum (b - a)^2); +inf when identical
  bool within_tolerance = true;  // every |b - a| <= atol + rtol * |a|
};

// `reference` is a, `candidate` is b. Any numeric or bool dtypes; values compared as doubles.
TensorStats CompareTensors(const Tensor& reference, const Tensor& candidate, double rtol,
                           double atol);

// What `run` prints per output: range and mean over the finite values, and how many are not.
struct ValueStats {
  double min = 0, max = 0, mean = 0;  // over finite values; 0 when there is none
  int64_t nan_count = 0;
  int64_t inf_count = 0;
};
// Any numeric or bool dtype. Error(kBadInput) for strings.
ValueStats SummarizeValues(const Tensor& tensor);

struct TensorComparison {
  std::string name;
  std::string node;  // the candidate's node that produced it
  std::string op;
  TensorStats stats;
};

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-4;
};

// Fills `v` with `count` values of a tensor as doubles, from element `begin` on: where the values
// live (memory, a temporary file) is the source's business, so a comparison never needs a whole
// tensor it does not already hold.
using ChunkSource = std::function<void(int64_t begin, int64_t count, double* v)>;
// `t`'s values (any numeric or bool dtype; Error(kBadInput) for others when read).
ChunkSource ChunksOf(const Tensor& t);

// The median of non-negative errors without keeping them: exact zeros apart, the rest in
// log-spaced bins (`per_decade` per decade from 1e-30 to 1e30), so the median is exact for zero
// and within half a bin otherwise (0.6% at 400 per decade), in constant memory. Preallocated, the
// bins cover the whole range at once; otherwise they grow to cover the errors seen (a few decades
// in practice), which keeps one histogram per tensor of a large model small.
class ErrorHistogram {
 public:
  explicit ErrorHistogram(int per_decade = 400, bool preallocate = true);
  void Add(double v);
  void Clear();
  // The element at index count/2 of the sorted errors (as std::nth_element would pick).
  double Median() const;

 private:
  static constexpr int kDecades = 60;
  int per_decade_;
  std::vector<int64_t> bins_;  // bins lo_ .. lo_ + bins_.size() - 1
  int64_t lo_ = 0;
  int64_t count_ = 0;
  int64_t zeros_ = 0;
};

// TensorStats over pairs of values that come in pieces (one tensor a chunk at a time, or one
// tensor over many samples), in memory independent of their number: running sums for the
// means, cosine and SQNR, and two ErrorHistograms for the medians. The single implementation of
// the statistics: CompareTensors and the per-tensor and isolated comparisons all use it.
class StatsAccumulator {
 public:
  explicit StatsAccumulator(int per_decade = 400, bool preallocate = true);
  void Clear();
  // `count` pairs: the reference's and the candidate's values, read from the sources a chunk at
  // a time into `a` and `b` (same size, at least 1).
  void Add(int64_t count, const ChunkSource& reference, const ChunkSource& candidate,
           const Tolerance& tolerance, std::vector<double>& a, std::vector<double>& b);
  // A pair that cannot be compared (shape or dtype differ): the statistics say so from now on,
  // with the first note.
  void MarkIncomparable(const std::string& note);
  TensorStats Stats() const;

 private:
  TensorStats s_;
  double dot_ = 0, na_ = 0, nb_ = 0, noise_ = 0, sum_abs_ = 0, sum_rel_ = 0;
  int64_t finite_ = 0;
  ErrorHistogram abs_hist_, rel_hist_;
};

struct CompareOptions {
  Tolerance tolerance;
  std::map<std::string, Tolerance> per_output;  // overrides for named outputs
  bool per_tensor = false;
  SessionOptions session;
  // The candidate's (B's) kernels when they differ from the reference's (custom kernels under
  // test against built-in ones).
  const KernelRegistry* kernels_b = nullptr;
  // The candidate's (B's) session options when its arithmetic differs from the reference's (B in
  // float16 against A in float32); unset: `session`. kernels_b still applies.
  std::optional<SessionOptions> session_b;
  // Where CompareModels streams the reference's outputs (a fresh subdirectory, removed after)
  // and, per tensor, every tensor the two models share (a temporary file, unlinked at once): it
  // needs room for all of them; a full disk is Error(kBadInput) naming the directory.
  std::filesystem::path scratch_dir;
  // A's tensor name -> B's name for the same tensor, for models that name it differently (a
  // renamed or re-exported copy; `porttool diff` fills it from its node matching). When set,
  // CompareModels pairs outputs and per-tensor intermediates through it, compares only the
  // tensors it maps, and reports B's names.
  std::map<std::string, std::string> names_b;
  // Ignored: the two runs no longer overlap (kept so that callers setting it still build).
  size_t lockstep_budget = size_t{4} << 20;

  const Tolerance& For(const std::string& name) const;
  // The candidate's session options: session_b (or session) with kernels_b.
  SessionOptions CandidateSession() const;
};

struct ModelComparison {
  std::vector<TensorComparison> outputs;        // in the reference's output order
  std::vector<TensorComparison> intermediates;  // per-tensor: in the candidate's execution order
  std::optional<size_t> first_divergent;        // index into intermediates
  std::vector<std::string> unmatched_outputs;   // reference outputs the candidate lacks
  bool within_tolerance = true;                 // every output compared and within tolerance
  // The candidate's session under float16 (Session::float16_overflows, float16_kept_float64).
  std::vector<Float16Overflow> float16_overflows;
  std::vector<std::string> float16_kept_float64;
};

// Runs `model` on `inputs` and streams into `store` its inputs, its outputs and every
// intermediate `keep` accepts (none when `keep` is empty). Finishes the store.
void RecordRun(const io::Model& model, const TensorMap& inputs, const SessionOptions& session,
               const std::function<bool(const std::string&)>& keep, TensorStore& store);

// Runs `candidate` on `inputs` and compares it with the stored reference: outputs by name, and in
// per-tensor mode every stored tensor the candidate produces, as it produces it (one reference
// tensor in memory at a time).
ModelComparison CompareWithStore(const io::Model& candidate, const TensorMap& inputs,
                                 const TensorStore& reference, const CompareOptions& options);

// A (reference) and B on the same `inputs`, one after the other. Outputs only: RecordRun into a
// temporary store under options.scratch_dir, then CompareWithStore. Per tensor: A's shared tensors
// go to a temporary file under options.scratch_dir, and B's are compared with them as B runs.
ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options);

}  // namespace porttool::runtime
