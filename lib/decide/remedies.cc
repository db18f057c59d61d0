#include "lib/decide/remedies.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/ir/dtype.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

nlohmann::json TensorJson(const AnalyzedModel& model, const std::string& name) {
  const TensorInfo* info = model.Info(name);
  nlohmann::json shape = nullptr;
  if (info && info->has_shape) {
    shape = nlohmann::json::array();
    for (int64_t d : info->dims) shape.push_back(d < 0 ? nlohmann::json("?") : nlohmann::json(d));
  }
  return {{"name", name},
          {"dtype", info && info->dtype ? ir::DtypeName(info->dtype) : "unknown"},
          {"shape", shape},
          {"constant", model.IsConstant(name)}};
}

nlohmann::json AttributeJson(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      return a.i();
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::GRAPH:
      return "<subgraph " + a.g().name() + ">";
    default:
      return "<" + onnx::AttributeProto::AttributeType_Name(a.type()) + ">";
  }
}

// Bytes that cross the cut when node `index` runs on the host: its run-time inputs and outputs.
std::optional<uint64_t> BridgeBytes(const AnalyzedModel& model, int index) {
  const auto& node = model.graph().node(index);
  uint64_t total = 0;
  for (const auto& names : {node.input(), node.output()}) {
    for (const auto& name : names) {
      if (name.empty() || model.IsConstant(name)) continue;
      const TensorInfo* info = model.Info(name);
      auto bytes = info ? info->Bytes() : std::nullopt;
      if (!bytes) return std::nullopt;
      total += *bytes;
    }
  }
  return total;
}

bool RuleApplies(const RemedyRule& rule, const AnalyzedModel& model, const NodeScan& s) {
  // Rule checks read main-graph attributes and shapes; a subgraph node has neither at s.index.
  if (rule.op != s.op || !s.parent.empty()) return false;
  if (rule.fixes.empty() != s.failures.empty()) return false;
  for (const auto& f : s.failures) {
    if (std::find(rule.fixes.begin(), rule.fixes.end(), f.id) == rule.fixes.end()) return false;
  }
  return std::all_of(rule.requires_checks.begin(), rule.requires_checks.end(), [&](const Check& c) {
    return RunCheck(c, model, s.index).status == CheckResult::Status::kPass;
  });
}

std::string BridgeText(const std::optional<uint64_t>& bytes) {
  return bytes ? util::FormatBytes(*bytes) + " per inference" : "unknown size (pin input shapes)";
}

}  // namespace

std::vector<RemedyRule> LoadRemedies(const JsonFile& f) {
  f.OnlyKeys("", {"schema", "description", "remedies"});
  if (f.String("/schema") != "porttool.remedies/1") {
    f.Fail("/schema", "expected \"porttool.remedies/1\"");
  }
  std::vector<RemedyRule> rules;
  const auto& arr = f.Array("/remedies");
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string p = "/remedies/" + std::to_string(i);
    f.OnlyKeys(p, {"id", "op", "fixes", "requires", "pass", "text"});
    RemedyRule r;
    r.id = f.String(p + "/id");
    r.op = f.String(p + "/op");
    if (r.op.find(':') == std::string::npos && !IsKnownOp(r.op, {})) {
      f.Fail(p + "/op", "unknown op name \"" + r.op +
                            "\" (expected an ai.onnx op known to "
                            "ONNX's schema registry, or \"domain:Op\")");
    }
    r.fixes = f.Strings(p + "/fixes");
    const auto& checks = f.Array(p + "/requires");
    for (size_t c = 0; c < checks.size(); ++c) {
      r.requires_checks.push_back(ParseCheck(f, p + "/requires/" + std::to_string(c)));
    }
    if (!f.At(p + "/pass").is_null()) r.pass = f.String(p + "/pass");
    r.text = f.String(p + "/text");
    rules.push_back(std::move(r));
  }
  return rules;
}

nlohmann::json CustomOpSignature(const AnalyzedModel& model, int index) {
  const auto& node = model.graph().node(index);
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array(),
                 attrs = nlohmann::json::object();
  for (const auto& in : node.input()) {
    if (!in.empty()) inputs.push_back(TensorJson(model, in));
  }
  for (const auto& out : node.output()) outputs.push_back(TensorJson(model, out));
  for (const auto& a : node.attribute()) attrs[a.name()] = AttributeJson(a);
  return {{"domain", node.domain().empty() ? "ai.onnx" : node.domain()},
          {"op", node.op_type()},
          {"opset", model.facts().opset},
          {"inputs", inputs},
          {"outputs", outputs},
          {"attributes", attrs}};
}

std::vector<NodeRemedies> ComputeRemedies(const AnalyzedModel& model, const TargetProfile& target,
                                          const TargetScan& scan,
                                          const std::vector<RemedyRule>& rules) {
  std::vector<NodeRemedies> out;
  for (const auto& s : scan.nodes) {
    if (s.placement != Placement::kUnsupported) continue;
    NodeRemedies nr{s.index, s.name, s.op, s.in_backbone, {}, false};
    for (const auto& rule : rules) {
      if (!RuleApplies(rule, model, s)) continue;
      nr.remedies.push_back({"rewrite", rule.id, rule.text, rule.pass, std::nullopt, nullptr});
      nr.resolved_without_custom_op = true;
    }
    auto bridge = s.parent.empty() ? BridgeBytes(model, s.index) : std::nullopt;
    if (!s.in_backbone && target.has_host_cpu) {
      nr.remedies.push_back({"strip-to-host", "",
                             fmt::format("Post-processing at the graph tail (no compute layer "
                                         "follows): cut before it (split at node '{}') and "
                                         "run it on the host CPU; bridge {}.",
                                         s.name, BridgeText(bridge)),
                             std::nullopt, bridge, nullptr});
      nr.resolved_without_custom_op = true;
    } else if (target.has_host_cpu) {
      nr.remedies.push_back({"split", "",
                             fmt::format("Run this backbone node on the host CPU between two "
                                         "accelerator segments (an automatic split for target "
                                         "{}); bridge {} each way costs a round trip.",
                                         target.name, BridgeText(bridge)),
                             std::nullopt, bridge, nullptr});
    }
    nr.remedies.push_back(
        {"custom-op", "",
         fmt::format("Implement {} for {} (its {} runtime has no kernel).", s.op, target.name,
                     target.title),
         std::nullopt, std::nullopt,
         s.parent.empty() ? CustomOpSignature(model, s.index) : nlohmann::json(nullptr)});
    out.push_back(std::move(nr));
  }
  return out;
}

std::vector<NodeRemedies> FallbackRewrites(const AnalyzedModel& model, const TargetScan& scan,
                                           const std::vector<RemedyRule>& rules) {
  std::vector<NodeRemedies> out;
  for (const auto& s : scan.nodes) {
    if (s.placement != Placement::kCpuFallback) continue;
    for (const auto& rule : rules) {
      if (!RuleApplies(rule, model, s)) continue;
      out.push_back({s.index,
                     s.name,
                     s.op,
                     s.in_backbone,
                     {{"rewrite", rule.id, rule.text, rule.pass, std::nullopt, nullptr}},
                     true});
    }
  }
  return out;
}

nlohmann::json RemediesToJson(const std::vector<NodeRemedies>& all) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& nr : all) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : nr.remedies) {
      nlohmann::json j = {{"kind", r.kind}, {"text", r.text}};
      if (!r.id.empty()) j["rule"] = r.id;
      if (r.kind == "rewrite")
        j["pass"] = r.pass ? nlohmann::json(*r.pass) : nlohmann::json(nullptr);
      if (r.kind == "split" || r.kind == "strip-to-host") {
        j["bridge_bytes"] =
            r.bridge_bytes ? nlohmann::json(*r.bridge_bytes) : nlohmann::json(nullptr);
      }
      if (r.kind == "custom-op") j["signature"] = r.signature;
      list.push_back(j);
    }
    out.push_back({{"node", nr.node},
                   {"index", nr.index},
                   {"op", nr.op},
                   {"in_backbone", nr.in_backbone},
                   {"resolved_without_custom_op", nr.resolved_without_custom_op},
                   {"remedies", list}});
  }
  return out;
}

}  // namespace porttool::decide
