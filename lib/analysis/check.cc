#include "lib/analysis/check.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::analysis {
namespace {

// ONNX messages append "==> Context: ..." paragraphs; the first paragraph says what is wrong.
std::string FirstParagraph(const std::string& text) {
  std::string out = text.substr(0, text.find("\n\n"));
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

bool OpsetTooNew(const io::Model& model) {
  for (const auto& op : model.proto.opset_import()) {
    int max = MaxKnownOpset(op.domain() == "ai.onnx" ? "" : op.domain());
    if (max > 0 && op.version() > max) return true;
  }
  return false;
}

// Inference results must not stay in a model that was only being checked.
class RestoreTypes {
 public:
  explicit RestoreTypes(onnx::GraphProto& graph)
      : graph_(graph), value_info_(graph.value_info()), outputs_(graph.output()) {}
  ~RestoreTypes() {
    graph_.mutable_value_info()->Swap(&value_info_);
    graph_.mutable_output()->Swap(&outputs_);
  }
  RestoreTypes(const RestoreTypes&) = delete;
  RestoreTypes& operator=(const RestoreTypes&) = delete;

 private:
  onnx::GraphProto& graph_;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> value_info_;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> outputs_;
};

}  // namespace

std::string SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

int CheckReport::Count(Severity severity) const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(),
                                        [&](const Finding& f) { return f.severity == severity; }));
}

std::vector<const Finding*> CheckReport::WithId(const std::string& id) const {
  std::vector<const Finding*> out;
  for (const auto& f : findings) {
    if (f.id == id) out.push_back(&f);
  }
  return out;
}

std::vector<ShownFinding> SelectFindings(const CheckReport& report, const FindingLimits& limits) {
  std::map<std::string, int> total_by_id = CountById(report);
  std::map<std::string, int> shown_by_id;
  std::vector<ShownFinding> shown;
  for (const auto& f : report.findings) {
    int& n = shown_by_id[f.id];
    // The first of every id is shown whatever the total: no kind of finding goes unmentioned.
    bool over = static_cast<size_t>(n) >= limits.per_id || (n > 0 && shown.size() >= limits.total);
    if (over) continue;
    ++n;
    shown.push_back({&f, 0});
  }
  // The count goes on the last shown of each id, so the summary follows its examples.
  std::map<std::string, bool> counted;
  for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
    const std::string& id = it->finding->id;
    if (counted[id]) continue;
    counted[id] = true;
    it->more_like_this = total_by_id[id] - shown_by_id[id];
  }
  return shown;
}

std::string MoreLikeThis(int hidden) {
  return fmt::format("and {} more like this", util::GroupDigits(hidden));
}

std::map<std::string, int> CountById(const CheckReport& report) {
  std::map<std::string, int> counts;
  for (const auto& f : report.findings) ++counts[f.id];
  return counts;
}

int MaxKnownOpset(const std::string& domain) {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(domain);
  return it == map.end() ? 0 : it->second.second;
}

// onnx::checker::check_model(const ModelProto&) resolves external-data locations against the
// current working directory (ONNX 1.12), which gives false "file doesn't exist" errors whenever
// porttool runs elsewhere. This is the same sequence (IR version and opsets, model-local
// functions, the graph) with the checker context pointed at the model's directory.
void CheckWithModelDir(const io::Model& model) {
  const auto& proto = model.proto;
  if (!proto.has_ir_version()) {
    throw onnx::checker::ValidationError("The model does not have an ir_version set properly.");
  }
  if (proto.ir_version() > onnx::Version::IR_VERSION) {
    throw onnx::checker::ValidationError(
        "Your model ir_version " + std::to_string(proto.ir_version()) +
        " is higher than the checker's (" + std::to_string(onnx::Version::IR_VERSION) + ").");
  }
  std::unordered_map<std::string, int> opsets;
  for (const auto& opset : proto.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    opsets[domain] = static_cast<int>(opset.version());
  }
  if (proto.ir_version() >= 3 && opsets.empty()) {
    throw onnx::checker::ValidationError("model with IR version >= 3 must specify opset_import");
  }
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(proto.ir_version()));
  ctx.set_opset_imports(opsets);
  std::error_code ec;
  auto dir = std::filesystem::canonical(model.base_dir.empty() ? "." : model.base_dir, ec);
  ctx.set_model_dir(ec ? model.base_dir.string() : dir.string());
  onnx::checker::LexicalScopeContext lex;
  onnx::checker::check_model_local_functions(proto, ctx, lex);
  onnx::checker::check_graph(proto.graph(), ctx, lex);
}

void RunOnnxChecker(const io::Model& model, CheckReport& report) {
  shape::RegisterContribSchemas();
  try {
    CheckWithModelDir(model);
  } catch (const std::exception& e) {
    report.Add({Severity::kError, "onnx-checker", "", "", FirstParagraph(e.what()),
                "the ONNX checker rejects the model: fix the exporter or the graph before "
                "porting it"});
  }
}

void RunStrictShapeInference(io::Model& model, CheckReport& report, bool pinned) {
  RestoreTypes restore(*model.proto.mutable_graph());
  shape::InferOptions options;
  options.strict = true;
  options.max_iterations = 1;
  try {
    shape::InferShapes(model, options);
  } catch (const io::ResourceClaimError&) {
    throw;  // not a finding about the graph: the model asks for what no target has
  } catch (const Error& e) {
    report.Add({Severity::kError, "shape-inference", e.node(), e.tensor(), e.what(),
                pinned ? "the pinned input shapes do not fit the graph at this node (the "
                         "model fails at run time too): pick dims the model supports, e.g. "
                         "multiples of its total stride"
                       : "declared shapes/types contradict what the ops compute: re-export, or "
                         "clear the stale value_info and run porttool infer-shapes"});
  }
}

namespace {

CheckReport CheckAsIs(io::Model& model, const CheckOptions& options, bool pinned) {
  CheckReport report;
  if (OpsetTooNew(model)) {
    // The checker and inference would fail with "No Op registered" on every node; the
    // opset-too-new lint says what is really wrong.
    report.Add({Severity::kInfo, "full-check-skipped", "", "",
                "the ONNX checker and shape inference were skipped: the model's opset is newer "
                "than this build knows",
                ""});
  } else {
    RunOnnxChecker(model, report);
    if (options.full_check) RunStrictShapeInference(model, report, pinned);
  }
  if (options.lints) RunPortingLints(model, report);
  return report;
}

}  // namespace

CheckReport CheckModel(io::Model& model, const CheckOptions& options) {
  if (options.input_shapes.empty()) return CheckAsIs(model, options, false);
  io::Model pinned = model;
  shape::ApplyInputShapes(pinned, options.input_shapes);
  return CheckAsIs(pinned, options, true);
}

}  // namespace porttool::analysis
