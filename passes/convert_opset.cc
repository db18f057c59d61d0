// convert-opset: moves the model to another default-domain opset.
//
// Before: opset_import ai.onnx 13; y = Relu(x)
// After:  opset_import ai.onnx 11; y = Relu(x)
//
// libonnx's version converter does the work where it has adapters. It throws onnx::assert_error
// (which aborts when uncaught) on adapter gaps, even for Relu 13 -> 11 whose schemas differ only in
// the types they accept. So: first, when every node's schema at the target version has the same
// inputs, outputs and attributes as at the source version and accepts the element types the
// model declares for it, only the version changes; otherwise the converter runs, and any failure
// is an Error(kBadInput) naming the cause. Resize 11+ -> below 10 points to resize-to-upsample.
// With min=/max= instead of to=, the model moves to the nearest opset of that range and a model
// already inside it is left alone: how a target profile's rewrites ask for "an opset I accept".
// If/Loop/Scan bodies are checked the same way, node by node at every depth: they share the
// model's opset import, so relabelling is right for them only when each of their nodes could be
// relabelled, and the version converter does not convert them at all. A body node that needs
// more is an Error(kBadInput) naming the main-graph node holding it (never a model whose bodies
// say one opset and mean another).
// Why: vendor converters pin opsets (RKNN-Toolkit2 wants 12..19, older TensorRT 11).
#include "passes/convert_opset.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/util/error.h"

namespace porttool::passes {
namespace {

bool SameSignature(const onnx::OpSchema& a, const onnx::OpSchema& b) {
  if (a.inputs().size() != b.inputs().size() || a.outputs().size() != b.outputs().size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    if (a.inputs()[i].GetName() != b.inputs()[i].GetName() ||
        a.inputs()[i].GetOption() != b.inputs()[i].GetOption()) {
      return false;
    }
  }
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const auto& [name, attr] : a.attributes()) {
    auto it = b.attributes().find(name);
    if (it == b.attributes().end() || it->second.type != attr.type) return false;
  }
  return true;
}

// Whether the declared element type of `tensor` (when known) is accepted by `schema`'s input i.
bool TypeAccepted(const ir::GraphView& view, const onnx::OpSchema& schema, size_t i,
                  const std::string& tensor) {
  const auto* vi = view.ValueInfo(tensor);
  if (!vi || i >= schema.inputs().size()) return true;
  std::string type =
      "tensor(" +
      onnx::Utils::DataTypeUtils::ToDataTypeString(vi->type().tensor_type().elem_type()) + ")";
  const auto& allowed = schema.inputs()[i].GetTypes();
  for (const auto* t : allowed) {
    if (*t == type) return true;
  }
  return allowed.empty();
}

// Why `node`'s version cannot simply be relabelled (types checked against `view`, its graph's
// index), or nullopt.
std::optional<std::string> WhyNotRelabelNode(const ir::GraphView& view, const onnx::NodeProto& node,
                                             int from, int to) {
  if (!ir::IsOnnxDomain(node.domain())) return std::nullopt;
  const auto* a = onnx::OpSchemaRegistry::Schema(node.op_type(), from, "");
  const auto* b = onnx::OpSchemaRegistry::Schema(node.op_type(), to, "");
  if (!a || !b) return node.op_type() + " has no schema at opset " + std::to_string(!a ? from : to);
  if (a->since_version() == b->since_version()) return std::nullopt;
  if (!SameSignature(*a, *b)) return node.op_type() + " changed signature";
  for (int i = 0; i < node.input_size(); ++i) {
    if (!TypeAccepted(view, *b, i, node.input(i))) {
      return node.op_type() + " input '" + node.input(i) + "' has a type opset " +
             std::to_string(to) + " does not accept";
    }
  }
  return std::nullopt;
}

// Why the main graph's own nodes cannot simply be relabelled, or nullopt.
std::optional<std::string> WhyNotRelabel(const onnx::ModelProto& model, int from, int to) {
  ir::GraphView view(model.graph());
  for (const auto& node : model.graph().node()) {
    if (auto why = WhyNotRelabelNode(view, node, from, to)) return why;
  }
  return std::nullopt;
}

// The first node inside an If/Loop/Scan body (at any depth) that cannot be relabelled: the
// version converter converts only the main graph, and the bodies share the model's opset
// import, so such a body would be left at the old version under the new label.
struct BodyProblem {
  const onnx::NodeProto* holder = nullptr;  // the main-graph node holding the body
  std::string node;                         // the body node
  std::string reason;
};

std::optional<BodyProblem> FindInBodies(const onnx::GraphProto& graph, int from, int to,
                                        const onnx::NodeProto* holder) {
  bool is_body = holder != nullptr;
  std::optional<ir::GraphView> view;
  if (is_body) view.emplace(graph);
  for (const auto& node : graph.node()) {
    if (is_body) {
      if (auto why = WhyNotRelabelNode(*view, node, from, to)) {
        return BodyProblem{holder, node.name().empty() ? node.op_type() : node.name(), *why};
      }
    }
    const onnx::NodeProto* outer = is_body ? holder : &node;
    for (const auto& attr : node.attribute()) {
      std::vector<const onnx::GraphProto*> bodies;
      if (attr.has_g()) bodies.push_back(&attr.g());
      for (const auto& g : attr.graphs()) bodies.push_back(&g);
      for (const auto* body : bodies) {
        if (auto problem = FindInBodies(*body, from, to, outer)) return problem;
      }
    }
  }
  return std::nullopt;
}

void SetOpset(onnx::ModelProto& model, int to) {
  for (auto& op : *model.mutable_opset_import()) {
    if (ir::IsOnnxDomain(op.domain())) op.set_version(to);
  }
}

// The newest ai.onnx opset this build's onnx knows: a model converted past it would claim an
// opset no runtime has (`to=99999` used to be written with exit 0).
int LatestOnnxOpset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 1 : it->second.second;
}

// The opset to convert to: `to`, or with min/max (a target profile's supported range) the nearest
// opset of the range, which is the model's own when it is inside (no conversion at all).
int TargetOpset(const PassOptions& options, int from) {
  if (options.Has("to")) {
    if (options.Has("min") || options.Has("max")) {
      ThrowUsage("convert-opset takes to=N, or min=N and/or max=N, not both");
    }
    return static_cast<int>(options.GetInt("to", 0, 1, LatestOnnxOpset()));
  }
  if (!options.Has("min") && !options.Has("max")) {
    ThrowUsage("convert-opset needs to=N (the target opset), or a range min=N max=N");
  }
  int lo = static_cast<int>(options.GetInt("min", 1, 1, LatestOnnxOpset()));
  int hi = static_cast<int>(options.GetInt("max", 1000, 1, 1000));
  if (lo > hi) ThrowUsage("convert-opset: min={} is above max={}", lo, hi);
  return std::clamp(from, lo, hi);
}

}  // namespace

PassResult ConvertOpsetPass::Run(io::Model& model, const PassOptions& options, PassContext&) const {
  int from = static_cast<int>(ir::OnnxOpset(model.proto));
  int to = TargetOpset(options, from);
  PassResult result;
  if (to == from) return result;
  if (to < 10) {
    for (const auto& node : model.proto.graph().node()) {
      if (node.op_type() == "Resize" && ir::IsOnnxDomain(node.domain())) {
        ThrowBadInput(
            "convert-opset: Resize '{}' has no form below opset 10; run "
            "resize-to-upsample first (Upsample is what opsets 7-9 have)",
            node.name());
      }
    }
  }
  if (auto problem = FindInBodies(model.proto.graph(), from, to, nullptr)) {
    const onnx::NodeProto& holder = *problem->holder;
    throw Error(
        ErrorKind::kBadInput,
        fmt::format("convert-opset {} -> {}: {} '{}' has a body node '{}' that needs "
                    "converting ({}), and the version converter converts only the main "
                    "graph; inline the If first when its condition is constant "
                    "(inline-if), or export the model at opset {}",
                    from, to, holder.op_type(), holder.name(), problem->node, problem->reason, to),
        holder.name());
  }
  auto why = WhyNotRelabel(model.proto, from, to);
  if (!why) {
    SetOpset(model.proto, to);
    result.notes.push_back(fmt::format(
        "opset {} -> {}: every op's schema is the same apart from accepted types; relabelled", from,
        to));
  } else {
    try {
      onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(model.proto, to);
      model.proto.mutable_graph()->Swap(converted.mutable_graph());
      SetOpset(model.proto, to);
    } catch (const std::exception& e) {
      ThrowBadInput("convert-opset {} -> {}: the version converter failed ({}); before that: {}",
                    from, to, e.what(), *why);
    }
    result.notes.push_back(fmt::format("opset {} -> {} through the version converter", from, to));
  }
  result.changes = 1;
  return result;
}

}  // namespace porttool::passes
