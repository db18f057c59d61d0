// The pass interface and registry. A pass is a model→model stage with a kebab-case id, a
// one-line summary and typed options; stages (infer-shapes, check, the graph rewrites) all share
// this interface so `porttool chain` can run any sequence of them on one in-memory model,
// loading once and saving once. Pattern passes separate a cheap match from the rewrite and
// record every skipped node with its reason; no match is not an error.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/io/model.h"

namespace porttool::passes {

// How passes evaluate a node on constant inputs (constant folding, probes). The runtime-backed
// implementation is RuntimeEvaluator (passes/runtime_evaluator.h); tests may hand in others.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Why `node` cannot be evaluated at `opset` (no kernel, subgraph...), or nullopt.
  virtual std::optional<std::string> WhyNot(const onnx::NodeProto& node, int opset) const = 0;
  // The node's outputs as TensorProtos named after its outputs (unnamed outputs: empty protos).
  // `inputs` has one entry per node input, nullptr for an absent optional input.
  virtual std::vector<onnx::TensorProto> Evaluate(
      const io::Model& model, const onnx::NodeProto& node, int opset,
      const std::vector<const onnx::TensorProto*>& inputs) const = 0;
};

// Options given to one pass instance, from a pipeline string `id{key=value key2=value}`.
class PassOptions {
 public:
  PassOptions() = default;
  explicit PassOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  std::string Get(const std::string& key, const std::string& def = "") const;
  int64_t GetInt(const std::string& key, int64_t def) const;  // Error(kUsage) if not an integer
  // The same, and Error(kUsage) naming the range when the value is outside [lo, hi]: a value cast
  // to int unchecked turned `to=4294967309` into 13.
  int64_t GetInt(const std::string& key, int64_t def, int64_t lo, int64_t hi) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// What every pass is handed besides its options: limits, the evaluator, an optional target
// profile id, and a sink that sees each note as it is made (the CLI logs them with -v).
struct PassContext {
  uint64_t max_tensor_bytes = uint64_t{1} << 20;  // largest tensor folding may create
  int max_rounds = 8;                             // fixed-point cap for iterating passes
  const Evaluator* evaluator = nullptr;           // null: DefaultEvaluator()
  std::string target;                             // target profile id, empty for none
  std::function<void(const std::string& pass, const std::string& note)> note_sink;

  const Evaluator& evaluator_or_default() const;
};

// The executor-backed evaluator.
const Evaluator& DefaultEvaluator();

struct PassResult {
  int changes = 0;                 // graph edits made (0: nothing matched)
  std::vector<std::string> notes;  // what was done or skipped, and why
  bool failed = false;             // a check stage found an error: the chain stops with exit 1
};

struct OptionHelp {
  std::string key;
  std::string help;
  // For an integer option, the range Run can honour: ValidatePipeline rejects any other value
  // (text, or a number Run would truncate) before a pass runs, so a target profile's rewrites
  // fail at load, naming the profile.
  std::optional<std::pair<int64_t, int64_t>> integer_range = std::nullopt;
};

// The integer range of an opset option: ONNX's opsets are small; 1000 is convert-opset's default
// ceiling.
inline constexpr std::pair<int64_t, int64_t> kOpsetRange{1, 1000};
// A count or cap Run keeps in an int.
inline constexpr std::pair<int64_t, int64_t> kIntRange{0, std::numeric_limits<int>::max()};
// A size in bytes.
inline constexpr std::pair<int64_t, int64_t> kBytesRange{0, std::numeric_limits<int64_t>::max()};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string id() const = 0;
  virtual std::string summary() const = 0;
  virtual std::vector<OptionHelp> options() const { return {}; }
  // Whether the pass looks inside If/Loop/Scan bodies (or says per node why not). For passes that
  // do not, the pipeline adds one note naming the bodies it left alone, so a pattern sitting in a
  // loop body is never skipped silently.
  virtual bool visits_subgraph_bodies() const { return false; }
  virtual PassResult Run(io::Model& model, const PassOptions& options,
                         PassContext& context) const = 0;
};

// Every registered pass, in registry-table order.
const std::vector<std::unique_ptr<Pass>>& Registry();
// The pass with this id, or Error(kUsage) listing the closest ids.
const Pass& FindPass(const std::string& id);

}  // namespace porttool::passes
