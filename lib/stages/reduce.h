// ReduceStage: `porttool reduce` as a library call. Shrinks a model on which some check fails to
// a 1-minimal model that still fails: removing any one remaining node makes the check pass.
// Every candidate is a sub-model of the source built by split's sub-model builder (a subset of
// the main graph's nodes; tensors read from removed nodes become typed graph inputs, tensors
// read by removed nodes or by the source's outputs become graph outputs), so each one is a valid
// model. Constant nodes are no units of the search: they come with the nodes that read them, as
// initializers (unless the failure needs them as nodes). The search first bisects over the
// topological order (the shortest failing prefix, then the shortest failing window ending there),
// then runs delta debugging (ddmin) over the window's nodes down to single nodes. Nodes holding
// subgraphs (If, Loop, Scan) are kept or removed whole: their bodies are not reduced. The check is
// an interface: a shell command (reduce_checks.h) or a numeric comparison run in process.
// Candidates of one round are checked in parallel and the first failing one in a fixed order is
// taken, so the result does not depend on `jobs`.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"

namespace porttool::stages {

// What one check said about one candidate.
struct CheckVerdict {
  bool failing = false;
  bool timed_out = false;
  int exit_code = 0;   // command checks: the command's exit status (-signal when killed)
  std::string detail;  // one line: why it failed or passed
};

// Decides whether a candidate still fails. Check() is called from up to `jobs` threads at once.
class CandidateCheck {
 public:
  virtual ~CandidateCheck() = default;
  // Whether Check() reads the candidate from a file (written into the work directory first).
  virtual bool needs_file() const = 0;
  // Whether the same candidate always gets the same verdict (in-process checks): the original
  // is then checked once instead of twice for flakiness.
  virtual bool deterministic() const = 0;
  // Identifies the check (command and criteria) in the cache kept in the work directory across
  // runs; empty: verdicts are cached for this run only.
  virtual std::string signature() const = 0;
  // `file` is the candidate as written (empty when needs_file() is false); `nodes` are the
  // source node indices it keeps.
  virtual CheckVerdict Check(const io::Model& candidate, const std::filesystem::path& file,
                             const std::vector<int>& nodes) = 0;
};

// One check as `reduce` prints it.
struct ReduceStep {
  std::string phase;  // original | known-good | prefix | window | ddmin
  int candidate = 0;  // sequence number (file c<NNNN>.onnx in the work directory)
  size_t nodes = 0;
  bool failing = false;
  bool cached = false;  // the verdict came from the cache, the check did not run
  double seconds = 0;
  std::string detail;
};

struct ReduceOptions {
  int jobs = 1;
  // Candidates, best.onnx, cache.json and reduce.json live here (created when missing).
  std::filesystem::path work_dir;
  std::function<void(const ReduceStep&)> on_step;  // called in order, from the calling thread
  const std::atomic<bool>* cancel = nullptr;       // set (e.g. by SIGINT): stop after this round
  // A model that must pass the check before reducing (the check is trusted to tell the two apart).
  std::optional<std::filesystem::path> known_good;
  bool bisect = true;  // false: ddmin over all nodes from the start (the plain ddmin)
  nlohmann::json report_extra = nlohmann::json::object();  // merged into reduce.json
};

struct ReduceResult {
  io::Model model;  // the smallest failing candidate found
  // Its source node indices: the units of the search (every node but the Constant nodes, which
  // come along with the nodes that read them).
  std::vector<int> nodes;
  size_t units = 0;                     // how many units the source has
  std::vector<std::string> node_names;  // their names ("#index (Op)" for an unnamed node)
  std::vector<ReduceStep> steps;
  int invocations = 0;  // checks that ran (cache hits excluded)
  int bisect_invocations = 0;
  int cache_hits = 0;
  bool minimal = false;      // every single-node removal of `nodes` was checked and passed
  bool interrupted = false;  // `cancel` stopped it: `model` is the best so far
  int subgraph_nodes = 0;    // nodes kept whole because they hold subgraphs
  // The failure needs the Constant nodes as nodes: candidates keep them instead of turning them
  // into initializers.
  bool constant_nodes_kept = false;
  double seconds = 0;
};

// The candidate keeping `nodes` (source indices) of `source`'s main graph. Boundary types come
// from `typed` (the source with its shapes completed; the source itself when null), so that a
// tensor whose shape only the executor could tell still gets a static shape as a graph input.
class CandidateBuilder {
 public:
  explicit CandidateBuilder(const io::Model& source, const io::Model* typed = nullptr);
  ~CandidateBuilder();
  // The Constant nodes the kept nodes read come along, as initializers unless
  // set_constants_as_initializers(false).
  io::Model Build(std::vector<int> nodes) const;
  void set_constants_as_initializers(bool on) { constants_as_initializers_ = on; }
  const std::vector<int>& topo_order() const { return order_; }
  std::vector<std::string> NodeNames(const std::vector<int>& nodes) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<int> order_;
  bool constants_as_initializers_ = true;
};

// Error(kCheckFailed) when the original passes, or passes once and fails once (flaky), or the known
// good model fails; errors of the check itself (command not found) propagate from Check().
ReduceResult Reduce(const io::Model& source, CandidateCheck& check, const ReduceOptions& options);

// The reduce.json document without the caller's part (ReduceOptions::report_extra).
nlohmann::json ReduceJson(const ReduceResult& result);

}  // namespace porttool::stages
