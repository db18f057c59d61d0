// resize-to-upsample: rewrites Resize as Upsample where both compute the same thing.
//
// Before: y = Resize(x, roi, scales=[1,1,2,2])  <mode=nearest, asymmetric, nearest_mode=floor>
// After:  y = Upsample(x, scales)                <mode=nearest>
//
// Preconditions (otherwise the Resize is kept and the exact reason noted):
//   - mode nearest with coordinate_transformation_mode asymmetric and nearest_mode floor, or mode
//     linear with asymmetric coordinates (opset 10 Resize has exactly these semantics);
//   - scales constant, or sizes constant with a static input shape (converted to scales, and
//     only when floor(in * scale) gives back every size); every scale >= 1 for nearest;
//   - roi is then unused (it only matters for tf_crop_and_resize).
// The opset is left as it is: ONNX deprecated Upsample from opset 10, so the ONNX checker and ONNX
// Runtime reject the result; it is meant for vendor converters (RKNN, older TensorRT and SNPE)
// that handle Upsample and not Resize, and porttool's executor runs it to verify the rewrite.
// Tolerance: identical outputs (same index arithmetic).
#include "passes/resize_to_upsample.h"

#include <fmt/format.h>

#include <cmath>
#include <variant>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/runtime/tensor_io.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

struct UpsamplePlan {
  int node;
  std::string mode;
  std::string scales_name;                   // an existing float constant, or empty
  std::optional<std::vector<float>> scales;  // values to store when scales came from sizes
};

std::optional<std::vector<int64_t>> StaticDims(const ir::GraphView& view, const std::string& t) {
  const auto* vi = view.ValueInfo(t);
  if (!vi || !vi->type().tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : vi->type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

std::optional<std::string> WhySemanticsDiffer(const onnx::NodeProto& node, int opset) {
  std::string mode = AttrString(node, "mode", "nearest");
  if (mode != "nearest" && mode != "linear") return mode + " mode: Upsample has no " + mode;
  if (opset < 11) return std::nullopt;  // Resize-10: asymmetric coordinates, as Upsample
  std::string coord = AttrString(node, "coordinate_transformation_mode", "half_pixel");
  if (coord != "asymmetric") return coord + " coordinates: Upsample cannot express them";
  std::string rounding = AttrString(node, "nearest_mode", "round_prefer_floor");
  if (mode == "nearest" && rounding != "floor") {
    return "nearest_mode " + rounding + ": Upsample rounds with floor";
  }
  return std::nullopt;
}

std::variant<UpsamplePlan, std::string> MatchUpsample(const io::Model& model,
                                                      const ir::GraphView& view,
                                                      const ir::ConstantLookup& constants,
                                                      int index, int opset) {
  const auto& node = view.node(index);
  if (auto why = WhySemanticsDiffer(node, opset)) return *why;
  UpsamplePlan plan{index, AttrString(node, "mode", "nearest"), "", std::nullopt};
  int scales_at = opset < 11 ? 1 : 2;
  std::vector<float> scales;
  if (node.input_size() > scales_at && !node.input(scales_at).empty() &&
      constants.Find(node.input(scales_at)) &&
      io::TensorPayloadBytes(*constants.Find(node.input(scales_at))) > 0) {
    auto t = FloatConstant(model, constants, node.input(scales_at));
    if (!t) return std::string("scales are not a float constant");
    scales.assign(t->data<float>(), t->data<float>() + t->size());
    plan.scales_name = node.input(scales_at);
  } else if (node.input_size() > 3 && !node.input(3).empty()) {
    const auto* sizes = constants.Find(node.input(3));
    auto dims = StaticDims(view, node.input(0));
    if (!sizes || !dims)
      return std::string("sizes are not constant or the input shape is not static");
    auto values = ir::ConstantAsDoubles(model, *sizes);
    if (!values || values->size() != dims->size())
      return std::string("sizes do not match the input rank");
    for (size_t i = 0; i < dims->size(); ++i) {
      float s = static_cast<float>((*values)[i] / static_cast<double>((*dims)[i]));
      if (std::floor((*dims)[i] * s) != (*values)[i]) {
        return fmt::format("size {} of axis {} is not reached by any float scale", (*values)[i], i);
      }
      scales.push_back(s);
    }
    plan.scales = scales;
  } else {
    return std::string("neither scales nor sizes are constant");
  }
  if (plan.mode == "nearest") {
    for (float s : scales) {
      if (s < 1) return std::string("a scale below 1 (downsampling): rounding differs");
    }
  }
  return plan;
}

// The roi/sizes Constant nodes the rewrite no longer reads.
void RemoveOrphanConstants(onnx::GraphProto& graph, const std::vector<std::string>& dropped) {
  ir::GraphView view(graph);
  std::vector<bool> remove(graph.node_size(), false);
  for (const auto& name : dropped) {
    int p = name.empty() ? -1 : view.Producer(name);
    if (p >= 0 && ir::IsConstantNode(view.node(p)) && view.Consumers(name).empty() &&
        !view.IsGraphOutput(name)) {
      remove[p] = true;
    }
  }
  ir::RemoveNodes(graph, remove);
}

}  // namespace

PassResult ResizeToUpsamplePass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  int opset = static_cast<int>(ir::OnnxOpset(model.proto));
  std::vector<UpsamplePlan> plans = MatchNodes<UpsamplePlan>(
      model, "Resize",
      [&](const ir::GraphView& view, const ir::ConstantLookup& constants, int i) {
        return MatchUpsample(model, view, constants, i, opset);
      },
      result);
  ir::NameGenerator names(graph);
  std::vector<std::string> dropped;
  for (auto& plan : plans) {
    auto* node = graph.mutable_node(plan.node);
    std::string scales = plan.scales_name;
    if (plan.scales) {
      scales = names.Tensor(node->name() + "_scales");
      runtime::Tensor t(onnx::TensorProto::FLOAT, {static_cast<int64_t>(plan.scales->size())});
      std::copy(plan.scales->begin(), plan.scales->end(), t.mutable_data<float>());
      ir::AddInitializer(graph, runtime::TensorToProto(t, scales), scales);
    }
    std::string x = node->input(0);
    for (int i = 1; i < node->input_size(); ++i) dropped.push_back(node->input(i));
    node->set_op_type("Upsample");
    node->clear_input();
    node->add_input(x);
    node->add_input(scales);
    node->clear_attribute();
    auto* mode = node->add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s(plan.mode);
    ++result.changes;
  }
  if (result.changes) {
    result.notes.push_back(fmt::format("rewrote {} Resize node(s) as Upsample", result.changes));
    if (opset >= 10) {
      result.notes.push_back(fmt::format(
          "the model keeps opset {}: ONNX deprecated Upsample from opset 10, so the ONNX checker "
          "and ONNX Runtime reject it; the output is for vendor converters",
          opset));
    }
  }
  RemoveOrphanConstants(graph, dropped);
  return result;
}

}  // namespace porttool::passes
