// resize-nearest-half-pixel: rewrites the coordinate mode of nearest Resize nodes that upsample by
// integer factors, so that NPU converters that accept only half_pixel without nearest_mode (RKNN:
// rknn.resize.coordinate-mode, rknn.resize.unset-attrs) keep them on the accelerator.
//
// Before: y = Resize(x, roi, scales=[1,1,2,2])  <mode=nearest, asymmetric, nearest_mode=floor>
// After:  y = Resize(x, roi, scales=[1,1,2,2])  <mode=nearest, half_pixel>  (nearest_mode removed:
//                                                round_prefer_floor, the default)
//
// Why it is exact: on an axis scaled by an integer s >= 1, write the output index x = k*s + r
// with 0 <= r < s; the exact source index is k.
//   - half_pixel: (x + 0.5)/s - 0.5 = k + (r + 0.5)/s - 0.5 lies in [k - 1/2 + 1/(2s),
//     k + 1/2 - 1/(2s)], strictly inside (k - 1/2, k + 1/2), so round_prefer_floor and
//     round_prefer_ceil both give k (there is no tie to break; a negative value at k = 0 rounds or
//     clamps to 0). floor and ceil do not (floor gives k - 1 for k >= 1 and r < s/2 - 1/2).
//   - asymmetric: x/s = k + r/s with r/s in [0, (s-1)/s]. floor gives k for every s;
//     round_prefer_floor gives k only while (s-1)/s <= 1/2, i.e. s <= 2 (at s = 2 the value
//     k + 1/2 is a tie, resolved down); round_prefer_ceil and ceil give k only for s = 1.
// So these are rewritten, every other combination is kept with the reason:
//   asymmetric + floor                  any integer scales
//   asymmetric + round_prefer_floor     integer scales <= 2
//   asymmetric + ceil/round_prefer_ceil every scale 1
//   half_pixel + round_prefer_ceil      any integer scales (only nearest_mode is removed)
//   half_pixel + round_prefer_floor     any scales (the attribute only restates the default)
// Floats: both formulas give exactly k in float32 (ONNX Runtime) while x + 0.5 < 2^23 — the
// quotient's ulp then stays below 1/s, the margin to the rounding boundary being 1/(2s) — and in
// the executor's double arithmetic far beyond (checked exhaustively in float32 for several s up
// to 10^6). A statically known output extent of 2^23 or more is therefore kept; dynamic extents
// are assumed below it (8 M elements on one axis).
//
// Preconditions (otherwise the node is kept and the exact reason noted):
//   - ONNX Resize at opset >= 11 (Resize-10 has no coordinate_transformation_mode or
//     nearest_mode: nothing to do), mode nearest;
//   - the scale condition above, from constant scales (initializer or Constant node), or from
//     constant sizes and a static input shape where every size is a multiple of its input dim;
//     every scale on every axis is then an integer >= 1 (the argument holds per axis, whatever
//     the axis means);
//   - the opset-18 attributes at their defaults: antialias 0, exclude_outside 0,
//     keep_aspect_ratio_policy stretch, no axes (present with the default value, they are
//     removed, as RKNN rejects any set attribute).
// cubic_coeff_a (read by cubic mode only) and extrapolation_value (read by tf_crop_and_resize
// only) are removed as well; PyTorch exports set cubic_coeff_a=-0.75 on nearest Resize nodes.
// roi is left as it is: only tf_crop_and_resize reads it. Tolerance: identical outputs.
#include "passes/resize_nearest_half_pixel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <variant>

#include "lib/io/model.h"
#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

// Output extents from here on are not reproduced exactly by float32 index arithmetic.
constexpr int64_t kMaxExactExtent = int64_t{1} << 23;

struct HalfPixelResizePlan {
  int node;
  bool set_half_pixel = false;      // coordinate_transformation_mode -> half_pixel
  std::vector<std::string> remove;  // attributes to drop
};

// Nothing to rewrite and nothing worth a note (already half_pixel without nearest_mode).
struct NothingToDo {};

int64_t ElementCount(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The per-axis scales of a nearest Resize (opset >= 11) from constant scales, or from constant
// sizes over a static input shape, each required to be an integer >= 1; or why not. `extents`
// gets each axis's output extent when it is statically known (-1 otherwise).
std::variant<std::vector<int64_t>, std::string> IntegerScales(const io::Model& model,
                                                              const ir::GraphView& view,
                                                              const ir::ConstantLookup& constants,
                                                              const onnx::NodeProto& node,
                                                              std::vector<int64_t>& extents) {
  std::optional<std::vector<int64_t>> dims;
  if (const auto* vi = view.ValueInfo(node.input(0))) dims = ir::StaticShape(vi->type());
  const onnx::TensorProto* scales =
      node.input_size() > 2 && !node.input(2).empty() ? constants.Find(node.input(2)) : nullptr;
  const bool has_sizes = node.input_size() > 3 && !node.input(3).empty();
  if (!scales && node.input_size() > 2 && !node.input(2).empty()) {
    return fmt::format("scales '{}' are not a constant", node.input(2));
  }
  std::vector<int64_t> result;
  // Opset 11-12 require a scales input and take an empty one when sizes are given.
  if (scales && (ElementCount(*scales) > 0 || !has_sizes)) {
    auto values = ir::ConstantAsDoubles(model, *scales);
    if (!values) return std::string("scales are not a numeric constant");
    if (values->empty()) return std::string("scales are empty and no sizes are given");
    if (dims && values->size() != dims->size()) {
      return fmt::format("{} scales for an input of rank {}", values->size(), dims->size());
    }
    for (size_t a = 0; a < values->size(); ++a) {
      double s = (*values)[a];
      if (s < 1) return fmt::format("scale {} on axis {} is below 1 (downsampling)", s, a);
      if (s != std::floor(s)) return fmt::format("scale {} on axis {} is not an integer", s, a);
      result.push_back(static_cast<int64_t>(s));
      extents.push_back(dims ? (*dims)[a] * result.back() : -1);
    }
    return result;
  }
  if (!has_sizes) return std::string("neither scales nor sizes are given");
  const auto* sizes = constants.Find(node.input(3));
  if (!sizes) return fmt::format("sizes '{}' are not a constant", node.input(3));
  if (!dims) {
    return fmt::format("sizes are given but the shape of input '{}' is not static", node.input(0));
  }
  auto values = ir::ConstantAsDoubles(model, *sizes);
  if (!values || values->size() != dims->size()) {
    return fmt::format("sizes do not match the input rank {}", dims->size());
  }
  for (size_t a = 0; a < dims->size(); ++a) {
    double size = (*values)[a];
    int64_t in = (*dims)[a];
    if (in <= 0) return fmt::format("input dim {} on axis {} is empty", in, a);
    if (size < static_cast<double>(in)) {
      return fmt::format("size {} on axis {} is below the input dim {} (downsampling)", size, a,
                         in);
    }
    if (std::fmod(size, static_cast<double>(in)) != 0) {
      return fmt::format("size {} on axis {} is not a multiple of the input dim {}", size, a, in);
    }
    result.push_back(static_cast<int64_t>(size) / in);
    extents.push_back(static_cast<int64_t>(size));
  }
  return result;
}

std::variant<HalfPixelResizePlan, NothingToDo, std::string> MatchHalfPixelResize(
    const io::Model& model, const ir::GraphView& view, const ir::ConstantLookup& constants,
    int index, int opset) {
  const auto& node = view.node(index);
  if (opset < 11) {
    return std::string(
        "opset-10 Resize has no coordinate_transformation_mode or nearest_mode: nothing to do");
  }
  std::string mode = AttrString(node, "mode", "nearest");
  if (mode != "nearest") return mode + " mode: only nearest is rewritten";

  HalfPixelResizePlan plan{index, false, {}};
  // Opset-18 attributes: accepted at their default value (and then removed), else kept.
  if (FindAttr(node, "axes")) return std::string("axes is set: the scales cover only those axes");
  if (FindAttr(node, "antialias")) {
    if (AttrInt(node, "antialias", 0) != 0) return std::string("antialias is set");
    plan.remove.push_back("antialias");
  }
  if (FindAttr(node, "exclude_outside")) {
    if (AttrInt(node, "exclude_outside", 0) != 0) return std::string("exclude_outside is set");
    plan.remove.push_back("exclude_outside");
  }
  if (FindAttr(node, "keep_aspect_ratio_policy")) {
    std::string policy = AttrString(node, "keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") return "keep_aspect_ratio_policy " + policy;
    plan.remove.push_back("keep_aspect_ratio_policy");
  }

  std::string coord = AttrString(node, "coordinate_transformation_mode", "half_pixel");
  std::string rounding = AttrString(node, "nearest_mode", "round_prefer_floor");
  const bool rounding_set = FindAttr(node, "nearest_mode") != nullptr;
  if (rounding != "floor" && rounding != "ceil" && rounding != "round_prefer_floor" &&
      rounding != "round_prefer_ceil") {
    return "nearest_mode " + rounding + " is not an ONNX nearest_mode";
  }
  // Largest scale for which `rounding` under `coord` picks floor(x / s) (see the top comment);
  // 0: no scale needs checking (the attribute only restates the default).
  int64_t max_scale = 0;
  std::string why_not;
  if (coord == "asymmetric") {
    plan.set_half_pixel = true;
    if (rounding == "floor") {
      max_scale = INT64_MAX;
    } else if (rounding == "round_prefer_floor") {
      max_scale = 2;
      why_not =
          "asymmetric + round_prefer_floor picks round(x/s), not floor(x/s), for scales "
          "above 2";
    } else {  // ceil, round_prefer_ceil
      max_scale = 1;
      why_not = "asymmetric + " + rounding + " picks " +
                (rounding == "ceil" ? "ceil(x/s)" : "round(x/s)") +
                ", not floor(x/s), for scales above 1";
    }
  } else if (coord == "half_pixel") {
    if (rounding == "round_prefer_ceil") {
      max_scale = INT64_MAX;  // no ties for integer scales
    } else if (rounding != "round_prefer_floor") {
      return "half_pixel + " + rounding + " picks a different pixel than round_prefer_floor";
    }
  } else {
    return coord + " coordinates: only asymmetric (and half_pixel with nearest_mode) are rewritten";
  }
  if (rounding_set) plan.remove.push_back("nearest_mode");
  for (const char* unread : {"cubic_coeff_a", "extrapolation_value"}) {
    if (FindAttr(node, unread)) plan.remove.push_back(unread);
  }
  if (!plan.set_half_pixel && plan.remove.empty()) return NothingToDo{};

  if (max_scale != 0) {
    std::vector<int64_t> extents;
    auto scales = IntegerScales(model, view, constants, node, extents);
    if (auto* reason = std::get_if<std::string>(&scales)) return *reason;
    const auto& s = std::get<std::vector<int64_t>>(scales);
    for (size_t a = 0; a < s.size(); ++a) {
      if (s[a] > max_scale) return fmt::format("{} (scale {} on axis {})", why_not, s[a], a);
      if (extents[a] >= kMaxExactExtent) {
        return fmt::format(
            "output extent {} on axis {} is 2^23 or more: float32 index arithmetic is no longer "
            "exact there",
            extents[a], a);
      }
    }
  }
  return plan;
}

void Rewrite(onnx::NodeProto& node, const HalfPixelResizePlan& plan) {
  if (plan.set_half_pixel) {
    bool found = false;
    for (auto& a : *node.mutable_attribute()) {
      if (a.name() != "coordinate_transformation_mode") continue;
      a.set_s("half_pixel");
      found = true;
    }
    if (!found) {
      auto* a = node.add_attribute();
      a->set_name("coordinate_transformation_mode");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s("half_pixel");
    }
  }
  auto* attrs = node.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i) {
    const auto& name = attrs->Get(i).name();
    if (std::find(plan.remove.begin(), plan.remove.end(), name) != plan.remove.end()) {
      attrs->DeleteSubrange(i, 1);
    }
  }
}

}  // namespace

PassResult ResizeNearestHalfPixelPass::Run(io::Model& model, const PassOptions&,
                                           PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  int opset = static_cast<int>(ir::OnnxOpset(model.proto));
  std::vector<HalfPixelResizePlan> plans = MatchNodes<HalfPixelResizePlan>(
      model, "Resize",
      [&](const ir::GraphView& view, const ir::ConstantLookup& constants, int i) {
        return MatchHalfPixelResize(model, view, constants, i, opset);
      },
      result);
  for (const auto& plan : plans) {
    Rewrite(*graph.mutable_node(plan.node), plan);
    ++result.changes;
  }
  if (result.changes) {
    result.notes.push_back(fmt::format(
        "rewrote {} nearest Resize node(s) to half_pixel coordinates without nearest_mode "
        "(identical outputs for their integer scales)",
        result.changes));
  }
  return result;
}

}  // namespace porttool::passes
