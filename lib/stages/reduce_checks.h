// The checks `reduce` can run on a candidate (lib/stages/reduce.h): a shell command whose exit
// status (and optionally output) says failing or passing, or a numeric comparison run in process
// (the candidate against the same part of a second model, or against itself under float16).
// Both can be given real values for the candidate's boundary inputs: the reference model is run
// on the user's samples and the tensors that become the candidate's inputs are taken from it, so
// a failure that depends on the data survives the cut. Every sample is used, not just the first:
// a divergence seen on one sample only is still a divergence.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/runtime/session.h"
#include "lib/stages/reduce.h"

namespace porttool::stages {

// Values of a model's tensors on a set of samples, computed on demand by running the model and
// kept (up to a byte budget) for the next candidate that needs them. Thread-safe.
class BoundaryValues {
 public:
  BoundaryValues(const io::Model& reference, std::vector<std::string> sample_ids,
                 std::vector<runtime::TensorMap> samples);
  ~BoundaryValues();
  // One map per sample with every name in `names`. A name the reference does not compute is left
  // out of the maps and returned in `missing`.
  std::vector<runtime::TensorMap> Get(const std::vector<std::string>& names,
                                      std::vector<std::string>* missing = nullptr);
  const std::vector<std::string>& sample_ids() const { return ids_; }

 private:
  const io::Model& reference_;
  std::vector<std::string> ids_;
  std::vector<runtime::TensorMap> samples_;
  std::vector<runtime::TensorMap> kept_;
  std::set<std::string> absent_;
  size_t kept_bytes_ = 0;
  std::unique_ptr<runtime::Session> session_;
  std::mutex mutex_;
};

struct CommandCheckOptions {
  std::string command;  // run by /bin/sh -c, {model} and {data} replaced by quoted paths
  // Exit statuses that mean failing; empty: any non-zero status fails.
  std::set<int> fail_codes;
  // When set, the output (stdout and stderr) must match it too (ECMAScript syntax).
  std::string fail_output_regex;
  double timeout_seconds = 0;                 // 0: no limit
  bool timeout_fails = true;                  // a candidate that hits the limit counts as failing
  BoundaryValues* values = nullptr;           // write the candidate's inputs to {data}
  const std::atomic<bool>* cancel = nullptr;  // kill the running command when set
};

// Error(kUsage) for a command without {model}, a regex that does not compile, or {data} without
// values.
class CommandCheck : public CandidateCheck {
 public:
  explicit CommandCheck(CommandCheckOptions options);
  bool needs_file() const override { return true; }
  bool deterministic() const override { return false; }
  std::string signature() const override;
  // Error(kUsage) showing the shell's message when the command is not found or not executable
  // (status 127 or 126).
  CheckVerdict Check(const io::Model& candidate, const std::filesystem::path& file,
                     const std::vector<int>& nodes) override;

 private:
  CommandCheckOptions options_;
};

struct NumericCheckOptions {
  double rtol = 1e-3;
  double atol = 1e-4;
  // The candidate is compared with the part of `against` computing the same outputs from the
  // same inputs (tensor names shared); null: with itself in float32, the candidate run in float16.
  const io::Model* against = nullptr;
  bool float16 = false;
  // Where the reference's values of a run wait for the candidate's (an unlinked scratch file);
  // empty: the system's temporary directory.
  std::filesystem::path spill_dir{};
};

// The candidate and its reference both get the same values at the candidate's inputs (the
// BoundaryValues the caller built: over the good model, or over the float source when comparing
// with its float16 or QDQ twin), so only the error the candidate's own nodes add is measured: the
// local error, not the accumulated one.
class NumericCheck : public CandidateCheck {
 public:
  NumericCheck(NumericCheckOptions options, BoundaryValues& values);
  bool needs_file() const override { return false; }
  bool deterministic() const override { return true; }
  std::string signature() const override;
  CheckVerdict Check(const io::Model& candidate, const std::filesystem::path& file,
                     const std::vector<int>& nodes) override;

 private:
  NumericCheckOptions options_;
  BoundaryValues& values_;
};

// `model` quoted for /bin/sh.
std::string ShellQuote(const std::string& text);

}  // namespace porttool::stages
