// `porttool check`: the ONNX checker, ONNX shape inference in strict mode (the checker's "full
// check"), and porting lints the checker does not give (custom domains, dynamic inputs, dead
// code, unsorted nodes, ...). Everything becomes a Finding with a severity, a stable kebab-case
// id, the node/tensor it concerns and a fix hint, collected in a CheckReport that later scans
// (e.g. target compatibility) append to. Runs on the in-memory model: external weights are never
// read and the model is left as it was found.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::analysis {

enum class Severity { kError, kWarning, kInfo };

// "error", "warning", "info".
std::string SeverityName(Severity severity);

struct Finding {
  Severity severity = Severity::kWarning;
  std::string id;  // stable kebab-case id, e.g. "custom-domain"; scripts may match on it
  std::string node;
  std::string tensor;
  std::string message;
  std::string fix;  // what to do about it; may be empty
};

struct CheckReport {
  std::vector<Finding> findings;

  void Add(Finding finding) { findings.push_back(std::move(finding)); }
  int Count(Severity severity) const;
  bool HasErrors() const { return Count(Severity::kError) > 0; }
  // Findings with this id (for tests and callers that react to one lint).
  std::vector<const Finding*> WithId(const std::string& id) const;
};

// A bounded view of a report for printing: a model with 10^5 dangling names has 10^5 findings,
// and a reader needs the first few of each kind and a count, not 10^5 lines.
struct ShownFinding {
  const Finding* finding = nullptr;
  int more_like_this = 0;  // > 0 on the last one shown of an id: how many of that id are hidden
};
struct FindingLimits {
  size_t per_id = 10;  // first N of each id, in report order
  size_t total = 100;  // and at most this many in all, but always the first of each id
};
std::vector<ShownFinding> SelectFindings(const CheckReport& report, const FindingLimits& limits);
// "and 99,990 more like this": what every printer says after the last one shown of an id.
std::string MoreLikeThis(int hidden);
// Findings per id, for the JSON documents that carry only the selection.
std::map<std::string, int> CountById(const CheckReport& report);

struct CheckOptions {
  bool full_check = true;  // strict shape inference after the checker
  bool lints = true;
  // Pinned on a copy before anything runs, so strict inference and every lint see the shapes the
  // model will be deployed with (a pin that makes two branches disagree is an error there).
  shape::InputShapes input_shapes;
};

// Runs the checker, (full check) strict shape inference, then the lints. `model` is only
// borrowed: inference results are removed again before returning.
CheckReport CheckModel(io::Model& model, const CheckOptions& options = {});

// The parts, for callers that compose their own check.
void RunOnnxChecker(const io::Model& model, CheckReport& report);
void RunStrictShapeInference(io::Model& model, CheckReport& report, bool pinned = false);
void RunPortingLints(const io::Model& model, CheckReport& report);

// Highest ai.onnx opset this build's schema registry knows (17 for ONNX 1.12).
int MaxKnownOpset(const std::string& domain = "");

}  // namespace porttool::analysis
