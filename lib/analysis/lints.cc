// The porting lints of `porttool check`: what the ONNX checker accepts but a port trips over.
#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "lib/analysis/check.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/initializer_inputs.h"
#include "lib/ir/node_names.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::analysis {
namespace {

// Domains defined by ONNX itself; anything else is a custom operator set.
bool IsOnnxDefinedDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" ||
         domain == "ai.onnx.preview.training";
}

std::string Canonical(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

std::string DomainLabel(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

void LintOpsets(const io::Model& model, CheckReport& report) {
  for (const auto& op : model.proto.opset_import()) {
    std::string domain = Canonical(op.domain());
    int max = MaxKnownOpset(domain);
    if (max <= 0 || op.version() <= max) continue;
    report.Add({Severity::kError, "opset-too-new", "", "",
                fmt::format("the model imports {} opset {}, newer than this build's ONNX 1.12 "
                            "schema registry knows (up to {}); checks and inference cannot "
                            "interpret its ops",
                            DomainLabel(domain), op.version(), max),
                fmt::format("export the model at opset {} or lower (or convert it down with a "
                            "newer onnx's version_converter)",
                            max)});
  }
}

std::string DeprecatedFix(const std::string& op_type) {
  if (op_type == "Upsample") return "replace it with Resize (same scales, mode='nearest')";
  if (op_type == "Scatter") return "replace it with ScatterElements";
  return "replace it with its successor op from the ONNX operator changelog";
}

void LintDeprecatedOps(const io::Model& model, const ir::GraphView& view, CheckReport& report) {
  std::map<std::string, int> opsets;
  for (const auto& op : model.proto.opset_import()) opsets[Canonical(op.domain())] = op.version();
  for (int i = 0; i < view.node_count(); ++i) {
    const auto& node = view.node(i);
    std::string domain = Canonical(node.domain());
    if (!IsOnnxDefinedDomain(domain) || !opsets.count(domain)) continue;
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opsets[domain], domain);
    if (!schema || !schema->Deprecated()) continue;
    report.Add({Severity::kWarning, "deprecated-op", ir::NodeLabel(node, i), "",
                fmt::format("{} is deprecated at opset {}; converters and NPU compilers may "
                            "reject it",
                            node.op_type(), opsets[domain]),
                DeprecatedFix(node.op_type())});
  }
}

void LintCustomDomains(const ir::GraphView& view, CheckReport& report) {
  struct Use {
    int count = 0;
    std::string first_node;
  };
  std::map<std::pair<std::string, std::string>, Use> uses;
  for (int i = 0; i < view.node_count(); ++i) {
    const auto& node = view.node(i);
    if (IsOnnxDefinedDomain(node.domain())) continue;
    auto& use = uses[{node.domain(), node.op_type()}];
    if (use.count++ == 0) use.first_node = ir::NodeLabel(node, i);
  }
  for (const auto& [key, use] : uses) {
    report.Add({Severity::kWarning, "custom-domain", use.first_node, "",
                fmt::format("custom operator {}::{} ({} node{}): NPU compilers and other "
                            "runtimes reject ops outside the ONNX domains",
                            key.first, key.second, use.count, use.count == 1 ? "" : "s"),
                fmt::format("rewrite it with standard ops, or cut the graph there (split at "
                            "node '{}') and run that part on the CPU",
                            use.first_node)});
  }
}

void LintDynamicInputs(const io::Model& model, CheckReport& report) {
  std::map<std::string, std::vector<std::string>> by_input;
  for (const auto& desc : shape::DynamicInputDims(model)) {
    by_input[desc.substr(0, desc.find_first_of("[ "))].push_back(desc);
  }
  std::unordered_map<std::string_view, const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : model.proto.graph().input())
    inputs[vi.name()] = &vi;  // the last, as before
  for (const auto& [input, dims] : by_input) {
    std::string example = input + ":DIMS";
    if (auto it = inputs.find(input); it != inputs.end()) {
      example = shape::ExampleInputShape(*it->second);
    }
    report.Add({Severity::kWarning, "dynamic-input", "", input,
                fmt::format("input '{}' has dynamic or missing dims: {}; most targets need "
                            "static shapes",
                            input, util::Join(dims, ", ")),
                fmt::format("pin them (check, infer-shapes, run, split, emit-header and decide "
                            "take the input shape), e.g. {}",
                            example)});
  }
}

void LintInitializerInputs(const ir::GraphView& view, CheckReport& report) {
  std::vector<std::string> names = ir::InitializerInputs(view.graph());
  if (names.empty()) return;
  constexpr size_t kShown = 3;
  report.Add(
      {Severity::kWarning, "initializer-input", "", names.front(),
       fmt::format("{} initializer(s) are also listed as graph inputs ({}), as "
                   "exporters did before IR 4: porttool treats them as initializers (a value given "
                   "for one at run time replaces it), but a converter or runtime may ask "
                   "the caller to feed them",
                   names.size(), util::JoinFirst(names, kShown)),
       "drop them from the graph inputs (the initializers stay)"});
}

bool Used(const ir::GraphView& view, const std::string& name) {
  return !view.Consumers(name).empty() || view.IsGraphOutput(name);
}

void LintUnused(const ir::GraphView& view, CheckReport& report) {
  for (const auto& t : view.graph().initializer()) {
    if (Used(view, t.name())) continue;
    report.Add({Severity::kWarning, "unused-initializer", "", t.name(),
                fmt::format("initializer '{}' is never read", t.name()),
                "remove it (it only costs file size and flash)"});
  }
  for (const auto* input : view.RealInputs()) {
    if (Used(view, input->name())) continue;
    report.Add({Severity::kWarning, "unused-input", "", input->name(),
                fmt::format("graph input '{}' is never read", input->name()),
                "remove it from the graph inputs, or check that the graph is wired as intended"});
  }
}

void LintDeadNodes(const ir::GraphView& view, CheckReport& report) {
  for (int i = 0; i < view.node_count(); ++i) {
    const auto& node = view.node(i);
    bool any_output = false, any_used = false;
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      any_output = true;
      any_used |= Used(view, out);
    }
    if (!any_output || any_used) continue;
    report.Add({Severity::kWarning, "dead-node", ir::NodeLabel(node, i), node.output(0),
                fmt::format("node {} computes outputs nobody uses",
                            ir::QuotedNodeLabel(ir::NodeLabel(node, i), node.op_type())),
                "remove it (and whatever only feeds it) before porting"});
  }
}

void LintLeftovers(const ir::GraphView& view, CheckReport& report) {
  for (int i = 0; i < view.node_count(); ++i) {
    const auto& node = view.node(i);
    if (!node.domain().empty() || (node.op_type() != "Identity" && node.op_type() != "Dropout")) {
      continue;
    }
    report.Add({Severity::kInfo, "inference-leftover", ir::NodeLabel(node, i), "",
                fmt::format("{} node '{}' does nothing at inference time but may cost a copy "
                            "on the target",
                            node.op_type(), ir::NodeLabel(node, i)),
                "fold it away: connect its consumers to its input"});
  }
}

void LintTopology(const ir::GraphView& view, CheckReport& report) {
  if (view.IsTopologicallySorted()) return;
  try {
    view.TopoOrder();
  } catch (const Error& e) {
    report.Add({Severity::kError, "cycle", e.node(), e.tensor(), e.what(),
                "an ONNX graph must be acyclic: fix the exporter"});
    return;
  }
  for (int i = 0; i < view.node_count(); ++i) {
    for (const auto& name : view.NodeReads(i)) {
      if (view.Producer(name) < i) continue;
      const auto& node = view.node(i);
      report.Add(
          {Severity::kError, "not-topological", ir::NodeLabel(node, i), name,
           fmt::format("node '{}' reads '{}' before the node producing it; ONNX requires "
                       "nodes in topological order",
                       ir::NodeLabel(node, i), name),
           "the graph is acyclic, so porttool can reorder the nodes: porttool chain MODEL -p "
           "topo-sort -o OUT"});
      return;  // one finding is enough: the fix reorders everything
    }
  }
}

void LintDuplicates(const ir::GraphView& view, CheckReport& report) {
  for (const auto& name : view.DuplicateDefinitions()) {
    report.Add({Severity::kError, "duplicate-name", "", name,
                fmt::format("tensor name '{}' is defined more than once (SSA violation)", name),
                "rename one of the definitions"});
  }
  std::map<std::string, int> counts;
  for (const auto& name : view.NodeNames()) ++counts[name];
  for (const auto& [name, count] : counts) {
    if (count < 2) continue;
    report.Add({Severity::kWarning, "duplicate-node-name", name, "",
                fmt::format("{} nodes are named '{}'; commands that select nodes by name "
                            "(split at a node) cannot tell them apart",
                            count, name),
                "give the nodes unique names"});
  }
}

void LintDangling(const ir::GraphView& view, CheckReport& report) {
  for (const auto& [i, name] : view.UndefinedReads()) {
    std::string message = ir::DescribeUndefinedRead(view.graph(), i, name);
    if (i < 0) {
      report.Add({Severity::kError, "dangling-input", "", name, message,
                  "remove the output or connect it"});
    } else {
      report.Add({Severity::kError, "dangling-input", ir::NodeLabel(view.node(i), i), name, message,
                  "connect it to the tensor it should read, or add the missing initializer"});
    }
  }
}

}  // namespace

void RunPortingLints(const io::Model& model, CheckReport& report) {
  ir::GraphView view(model.proto.graph());
  LintOpsets(model, report);
  LintDeprecatedOps(model, view, report);
  LintCustomDomains(view, report);
  LintDynamicInputs(model, report);
  LintInitializerInputs(view, report);
  LintUnused(view, report);
  LintDeadNodes(view, report);
  LintLeftovers(view, report);
  LintTopology(view, report);
  LintDuplicates(view, report);
  LintDangling(view, report);
}

}  // namespace porttool::analysis
