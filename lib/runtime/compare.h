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
