#include "lib/quant/qdq.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <map>
#include <unordered_set>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::quant {
namespace {

using TP = onnx::TensorProto;
using runtime::Tensor;

constexpr const char* kGeluReason =
    "decomposed GELU (x * 0.5 * (1 + Erf(x / sqrt 2))): INT8 inside it loses accuracy; NPUs fuse "
    "it (RKNN exGelu) and keep it in float16";
constexpr const char* kLayerNormReason =
    "decomposed LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div): mean and variance need float "
    "(RKNN runs exNorm in float16 only)";

bool IsOp(const onnx::NodeProto& n, std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (n.op_type() == op) return true;
  }
  return false;
}

constexpr const char* kAffineReason =
    "elementwise with a scalar or per-channel constant (a scale or shift): integer backends fold "
    "it into the neighbouring op, so a Q/DQ in front of it would only add a requantization";
constexpr const char* kHardSwishReason =
    "decomposed hard-swish (x * relu6(x + 3) / 6 or x * HardSigmoid(x)): one activation that "
    "integer backends fuse; Q/DQ inside it would requantize the same values twice";

// Initializers and Constant-node outputs: what InsertQdq treats as weights, not activations.
std::set<std::string> ConstantNames(const onnx::GraphProto& g) {
  std::set<std::string> out;
  for (const auto& init : g.initializer()) out.insert(init.name());
  for (const auto& n : g.node()) {
    if (n.op_type() == "Constant") out.insert(n.output().begin(), n.output().end());
  }
  return out;
}

// Whether `tensor` is computed from `source` through at most four elementwise steps with
// constants or unary activations (the gate side of a decomposed hard-swish).
bool DerivedElementwise(const ir::GraphView& view, const ir::ConstantLookup& constants,
                        std::string tensor, const std::string& source) {
  for (int depth = 0; depth < 4; ++depth) {
    int p = view.Producer(tensor);
    if (p < 0) return false;
    const auto& n = view.graph().node(p);
    if (!IsOp(n, {"Add", "Sub", "Mul", "Div", "Clip", "Relu", "HardSigmoid"})) return false;
    std::string next;
    for (const auto& in : n.input()) {
      if (in.empty() || constants.IsConstant(in)) continue;
      if (!next.empty()) return false;  // two activation operands: not a gate
      next = in;
    }
    if (next == source) return true;
    if (next.empty()) return false;
    tensor = next;
  }
  return false;
}

// A constant with at most one dimension above 1: a scalar or per-channel scale or shift, which
// an integer backend folds into the neighbouring op. A full-size constant (a positional
// embedding) is a real elementwise operand.
bool ScaleOrShift(const ir::ConstantLookup& constants, const std::string& name) {
  const onnx::TensorProto* t = constants.Find(name);
  if (t == nullptr) return false;
  int wide = 0;
  for (int64_t d : t->dims()) wide += d > 1;
  return wide <= 1;
}

// Marks the Add/Mul nodes that integer backends fuse into a neighbour: an elementwise op with a
// scale or shift constant (PP-LCNetV3's affine blocks, an unfused scale), and the final Mul of a
// decomposed hard-swish. A residual Add or an attention/SE Mul of two activations stays
// quantized.
void MarkFusedElementwise(const ir::GraphView& view, std::map<int, std::string>& excluded) {
  const ir::ConstantLookup constants(view);
  const auto& g = view.graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (!IsOp(n, {"Add", "Mul"}) || n.input_size() != 2) continue;
    if (ScaleOrShift(constants, n.input(0)) || ScaleOrShift(constants, n.input(1))) {
      excluded.emplace(i, kAffineReason);
    } else if (n.op_type() == "Mul" &&
               (DerivedElementwise(view, constants, n.input(1), n.input(0)) ||
                DerivedElementwise(view, constants, n.input(0), n.input(1)))) {
      excluded.emplace(i, kHardSwishReason);
    }
  }
}

// Marks the Add/Mul/Div nodes of decomposed GELU and LayerNorm subgraphs.
void MarkPatterns(const ir::GraphView& view, std::map<int, std::string>& excluded) {
  const auto& g = view.graph();
  auto consumers_of = [&](int n) {
    std::vector<int> out;
    for (const auto& o : g.node(n).output()) {
      for (int c : view.Consumers(o)) out.push_back(c);
    }
    return out;
  };
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() == "Erf") {
      int p = view.Producer(n.input(0));
      if (p >= 0 && IsOp(g.node(p), {"Div", "Mul"})) excluded.emplace(p, kGeluReason);
      std::vector<int> frontier = {i};
      for (int depth = 0; depth < 3; ++depth) {  // Add(1), Mul(x), Mul(0.5)
        std::vector<int> next;
        for (int f : frontier) {
          for (int c : consumers_of(f)) {
            if (IsOp(g.node(c), {"Add", "Mul"})) {
              excluded.emplace(c, kGeluReason);
              next.push_back(c);
            }
          }
        }
        frontier = next;
      }
    }
    if (n.op_type() == "ReduceMean") {
      for (int sub : view.Consumers(n.output(0))) {
        const auto& s = g.node(sub);
        if (s.op_type() != "Sub" || s.input(0) != n.input(0)) continue;
        std::vector<int> frontier = {sub};
        excluded.emplace(sub, kLayerNormReason);
        for (int depth = 0; depth < 8 && !frontier.empty(); ++depth) {
          std::vector<int> next;
          for (int f : frontier) {
            bool after_div = g.node(f).op_type() == "Div" || g.node(f).op_type() == "Mul";
            for (int c : consumers_of(f)) {
              const auto& cn = g.node(c);
              bool in_norm = IsOp(cn, {"Pow", "Mul", "ReduceMean", "Add", "Sqrt", "Div"});
              if (!in_norm || (after_div && !IsOp(cn, {"Mul", "Add"}))) continue;
              if (excluded.emplace(c, kLayerNormReason).second) next.push_back(c);
            }
          }
          frontier = next;
        }
      }
    }
  }
}

// Ops that changed between opsets 9 and 10: Slice and TopK (attributes became inputs), Upsample
// (deprecated in favour of Resize, same inputs and modes), Dropout (the mask became bool).
bool ChangedInOpset10(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return n.op_type() == "Slice" || n.op_type() == "TopK" || n.op_type() == "Upsample" ||
         n.op_type() == "Dropout";
}

// Whether RaiseToOpset10 can rewrite every changed op of `g` (subgraphs included): all but a
// Dropout whose mask output is used.
bool CanRaiseToOpset10(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    if (ChangedInOpset10(n) && n.op_type() == "Dropout" && n.output_size() > 1 &&
        !n.output(1).empty()) {
      return false;
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g() && !CanRaiseToOpset10(a.g())) return false;
      for (const auto& sub : a.graphs()) {
        if (!CanRaiseToOpset10(sub)) return false;
      }
    }
  }
  return true;
}

// Moves an ints attribute of `n` into a new int64 initializer input of `g` (an empty input name
// when the attribute is absent and `optional`).
void AttributeToInput(onnx::GraphProto& g, onnx::NodeProto& n, const std::string& attr,
                      bool optional) {
  for (int i = 0; i < n.attribute_size(); ++i) {
    if (n.attribute(i).name() != attr) continue;
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(n.output(0) + "_" + attr);
    t->set_data_type(onnx::TensorProto::INT64);
    const auto& a = n.attribute(i);
    if (a.type() == onnx::AttributeProto::INT) {
      t->add_dims(1);
      t->add_int64_data(a.i());
    } else {
      t->add_dims(a.ints_size());
      for (int64_t v : a.ints()) t->add_int64_data(v);
    }
    n.add_input(t->name());
    n.mutable_attribute()->DeleteSubrange(i, 1);
    return;
  }
  if (optional) n.add_input("");
}

// Rewrites the ops of `g` (subgraphs included) that changed between opsets 9 and 10 into their
// opset-10 form, with the same meaning; CanRaiseToOpset10(g) must hold.
void RaiseToOpset10(onnx::GraphProto& g) {
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) RaiseToOpset10(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) RaiseToOpset10(sub);
    }
    if (!ChangedInOpset10(n)) continue;
    if (n.op_type() == "Slice") {
      for (const char* attr : {"starts", "ends", "axes"}) {
        AttributeToInput(g, n, attr, std::string(attr) == "axes");
      }
      while (n.input_size() > 0 && n.input(n.input_size() - 1).empty()) {
        n.mutable_input()->RemoveLast();
      }
    } else if (n.op_type() == "TopK") {
      AttributeToInput(g, n, "k", false);
    } else if (n.op_type() == "Upsample") {
      n.set_op_type("Resize");
    }
  }
}

void SetDefaultOpset(onnx::ModelProto& m, int version) {
  for (auto& o : *m.mutable_opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(version);
  }
}

class QdqBuilder {
 public:
  QdqBuilder(io::Model& model, const CalibrationTable& table, const QdqOptions& options)
      : model_(model), g_(*model.proto.mutable_graph()), table_(table), options_(options) {
    int opset = 1;
    for (const auto& o : model.proto.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    }
    // ONNX Runtime fuses Q/DQ around Conv/MatMul into QLinearConv/QLinearMatMul, which exist
    // from opset 10: with com.microsoft pairs in an opset-9 model the fused graph is invalid and
    // the model does not load. So an opset-9 model is raised to 10 when its ops allow it.
    if (opset == 9 && CanRaiseToOpset10(g_)) {
      RaiseToOpset10(g_);
      SetDefaultOpset(model.proto, 10);
      result_.notes.push_back(
          "opset 9 raised to 10 for the standard QuantizeLinear (Slice/TopK attributes became "
          "inputs, Upsample became Resize): ONNX Runtime's QDQ fusion needs opset 10");
      opset = 10;
    }
    opset_ = opset;
    if (opset < 10) {
      // QuantizeLinear is opset 10; raising the model's opset could change other ops, so the
      // pairs use ONNX Runtime's com.microsoft definitions (same semantics, axis allowed).
      domain_ = "com.microsoft";
      per_axis_ = true;
      bool has = false;
      for (const auto& o : model.proto.opset_import()) has |= o.domain() == domain_;
      if (!has) {
        auto* o = model.proto.add_opset_import();
        o->set_domain(domain_);
        o->set_version(1);
      }
      result_.notes.push_back(fmt::format(
          "opset {} predates QuantizeLinear: Q/DQ nodes use the com.microsoft domain; ONNX "
          "Runtime then needs graph optimizations off (its QDQ fusion emits opset-10 ops): "
          "convert the model to opset 13 first for a model every runtime loads",
          opset));
    } else {
      per_axis_ = opset >= 13;
      if (!per_axis_ && options.per_channel) {
        result_.notes.push_back(fmt::format(
            "opset {} has no per-axis DequantizeLinear: per-channel weights are "
            "DequantizeLinear(scale 1) then Mul by the channel scales; convert the model to "
            "opset 13 for the standard form",
            opset));
      }
    }
    for (const auto& init : g_.initializer()) constants_[init.name()] = &init;
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      if (n.op_type() != "Constant" || n.output_size() != 1) continue;
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) constants_[n.output(0)] = &a.t();
      }
    }
  }

  QdqResult Run() {
    ir::GraphView view(g_);
    std::map<int, std::string> excluded = Exclusions(view);
    std::vector<std::vector<onnx::NodeProto>> before(g_.node_size());
    for (int i = 0; i < g_.node_size(); ++i) {
      onnx::NodeProto& n = *g_.mutable_node(i);
      if (auto it = excluded.find(i); it != excluded.end()) {
        result_.excluded.push_back({n.name(), n.op_type(), it->second});
        continue;
      }
      if (!QuantizableOps().count(n.op_type())) continue;
      pending_ = &before[i];
      wide_ = int16_.count(n.name()) > 0;
      if (QuantizeNode(n)) {
        ++result_.quantized_nodes;
        if (wide_) result_.int16_nodes.push_back(n.name());
      }
    }
    wide_ = false;
    Assemble(before);
    return result_;
  }

 private:
  std::map<int, std::string> Exclusions(const ir::GraphView& view) {
    std::set<std::string> known_ops;
    for (const auto& n : g_.node()) known_ops.insert(n.op_type());
    for (const auto& op : options_.exclude_ops) {
      if (!known_ops.count(op) && onnx::OpSchemaRegistry::Schema(op) == nullptr) {
        std::vector<std::string> pool(known_ops.begin(), known_ops.end());
        pool.insert(pool.end(), QuantizableOps().begin(), QuantizableOps().end());
        ThrowUsage("excluded op '{}' is not an ONNX op type (did you mean: {}?)", op,
                   util::Join(util::ClosestNames(op, pool, 3), ", "));
      }
    }
    std::map<int, std::string> excluded;
    for (const auto& ref : options_.int16_nodes) {
      int16_.insert(view.node(ir::ResolveNodeRef(view, ref, "int16 node")).name());
    }
    for (const auto& ref : options_.exclude_nodes) {
      excluded[ir::ResolveNodeRef(view, ref, "excluded node")] = "excluded by the user (node name)";
    }
    for (const auto& name : options_.fallback_nodes) {
      if (int idx = view.FindNode(name); idx >= 0) {
        excluded.emplace(idx, "mixed precision: raised to float by the accuracy-target search");
      }
    }
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      for (const auto& op : options_.exclude_ops) {
        if (n.op_type() == op) excluded.emplace(i, "excluded by the user (op type)");
      }
      if (IsOp(n, {"Softmax", "LayerNormalization"})) {
        excluded.emplace(i, n.op_type() == "Softmax"
                                ? "Softmax: exponentials of INT8 inputs lose the small "
                                  "probabilities; kept float by default"
                                : "LayerNormalization: mean and variance need float; kept "
                                  "float by default");
      }
    }
    MarkPatterns(view, excluded);
    MarkFusedElementwise(view, excluded);
    return excluded;
  }

  bool IsFloatConstant(const std::string& name) const {
    auto it = constants_.find(name);
    return it != constants_.end() &&
           (it->second->data_type() == TP::FLOAT || it->second->data_type() == TP::FLOAT16);
  }

  bool QuantizeNode(onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    bool changed = false;
    auto act = [&](int i) {
      if (i < n.input_size() && !n.input(i).empty() && !constants_.count(n.input(i))) {
        changed |= Activation(*n.mutable_input(i));
      }
    };
    auto weight = [&](int i, int axis) {
      if (i < n.input_size() && IsFloatConstant(n.input(i))) {
        changed |= Weight(*n.mutable_input(i), options_.per_channel ? axis : -1);
      }
    };
    if (op == "Conv" || op == "ConvTranspose") {
      std::string x = n.input(0), w = n.input_size() > 1 ? n.input(1) : "";
      floor_ = n.input_size() > 2 ? BiasFloor(x, n.input(2)) : std::vector<float>{};
      fit_node_ = n.name();
      act(0);
      weight(1, op == "Conv" ? 0 : 1);
      floor_.clear();
      if (op == "Conv" && options_.bias_correction && weights_.count(w)) CorrectBias(n, w);
      if (n.input_size() > 2 && n.input(0) != x && weights_.count(w) &&
          IsFloatConstant(n.input(2))) {
        Bias(*n.mutable_input(2), x, weights_.at(w));
      }
    } else if (op == "MatMul" || op == "Gemm" || op == "Add" || op == "Mul") {
      bool trans_b = false;
      for (const auto& a : n.attribute()) trans_b |= a.name() == "transB" && a.i() != 0;
      int b_axis = op == "MatMul" ? 1 : op == "Gemm" ? (trans_b ? 0 : 1) : -1;
      bool elementwise = op == "Add" || op == "Mul";
      for (int i = 0; i < std::min(2, n.input_size()); ++i) {
        if (!IsFloatConstant(n.input(i))) {
          act(i);
        } else if (!elementwise) {  // Add/Mul constants (biases, BN scales) stay float
          weight(i, i == 1 ? b_axis : -1);
        }
      }
    } else if (op == "Concat") {
      for (int i = 0; i < n.input_size(); ++i) act(i);
    } else {
      act(0);
    }
    return changed;
  }

  std::string AddInit(const Tensor& t, const std::string& name) {
    *g_.add_initializer() = runtime::TensorToProto(t, name);
    return name;
  }

  // The Q/DQ parameters of an activation: the table's 8-bit ones, or for a 16-bit node the same
  // range on 65536 levels (uint16 asymmetric, or int16 symmetric when the table is int8).
  struct ActQuant {
    int32_t dtype;
    double scale;
    int64_t zero_point;
  };
  ActQuant Params(const TableEntry& e) const {
    const bool int8 = e.dtype == "int8";
    if (!wide_) return {int8 ? TP::INT8 : TP::UINT8, e.scale, e.zero_point};
    if (int8) {
      const double m = std::max(std::fabs(e.min), std::fabs(e.max));
      return {TP::INT16, m > 0 ? m / 32767 : 1.0, 0};
    }
    const double range = e.max - e.min;
    const double scale = range > 0 ? range / 65535 : 1.0;
    return {TP::UINT16, scale, std::clamp<int64_t>(std::llround(-e.min / scale), 0, 65535)};
  }

  bool Activation(std::string& name) {
    const std::string key = wide_ ? name + "#16" : name;
    if (auto it = done_.find(key); it != done_.end()) {
      name = it->second;
      return true;
    }
    auto it = table_.tensors.find(name);
    if (it == table_.tensors.end()) {
      if (missing_.insert(name).second) result_.missing_ranges.push_back(name);
      return false;
    }
    const ActQuant p = Params(it->second);
    Tensor scale(TP::FLOAT, {}), zp(p.dtype, {});
    scale.mutable_data<float>()[0] = static_cast<float>(p.scale);
    switch (p.dtype) {
      case TP::INT8:
        zp.mutable_data<int8_t>()[0] = static_cast<int8_t>(p.zero_point);
        break;
      case TP::UINT8:
        zp.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(p.zero_point);
        break;
      case TP::INT16:
        zp.mutable_data<int16_t>()[0] = static_cast<int16_t>(p.zero_point);
        break;
      default:
        zp.mutable_data<uint16_t>()[0] = static_cast<uint16_t>(p.zero_point);
        break;
    }
    const std::string base = wide_ ? name + "_i16" : name;
    std::string s = AddInit(scale, base + "_scale"), z = AddInit(zp, base + "_zero_point");
    std::string q = base + "_QuantizeLinear_Output", dq = base + "_DequantizeLinear_Output";
    AddNode("QuantizeLinear", base + "_QuantizeLinear", {name, s, z}, q, -1);
    AddNode("DequantizeLinear", base + "_DequantizeLinear", {q, s, z}, dq, -1);
    ++(wide_ ? result_.int16_activations : result_.quantized_activations);
    done_[key] = dq;
    name = dq;
    return true;
  }

  void AddNode(const std::string& op, const std::string& node_name,
               const std::vector<std::string>& inputs, const std::string& output, int axis) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(node_name);
    n.set_domain(op == "Mul" ? "" : wide_ && opset_ < 21 ? WideDomain() : domain_);
    for (const auto& i : inputs) n.add_input(i);
    n.add_output(output);
    if (axis >= 0) {
      auto* a = n.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(axis);
    }
    pending_->push_back(std::move(n));
  }

  // 16-bit Q/DQ below opset 21 are com.microsoft's (what ONNX Runtime runs); the model then
  // imports that domain.
  std::string WideDomain() {
    bool has = false;
    for (const auto& o : model_.proto.opset_import()) has |= o.domain() == "com.microsoft";
    if (!has) {
      auto* o = model_.proto.add_opset_import();
      o->set_domain("com.microsoft");
      o->set_version(1);
    }
    return "com.microsoft";
  }

  // Dequantizes `q` (int8 or int32) with per-tensor or per-axis `scale` into `out`.
  void Dequantize(const std::string& base, const Tensor& q, const Tensor& scale,
                  const std::string& out, int axis) {
    std::string qn = AddInit(q, base + "_quantized");
    if (axis < 0 || per_axis_) {
      Tensor zp(q.dtype(), scale.shape());
      std::string s = AddInit(scale, base + "_scale"), z = AddInit(zp, base + "_zero_point");
      AddNode("DequantizeLinear", base + "_DequantizeLinear", {qn, s, z}, out, axis);
      return;
    }
    Tensor one(TP::FLOAT, {}), zp(q.dtype(), {});
    one.mutable_data<float>()[0] = 1.f;
    std::vector<int64_t> bshape(q.rank(), 1);
    bshape[axis] = scale.size();
    std::string s = AddInit(scale.Reshaped(bshape), base + "_scale");
    std::string o = AddInit(one, base + "_one"), z = AddInit(zp, base + "_zero_point");
    AddNode("DequantizeLinear", base + "_DequantizeLinear", {qn, o, z}, base + "_int", -1);
    AddNode("Mul", base + "_ChannelScale", {base + "_int", s}, out, -1);
  }

  bool Weight(std::string& name, int axis) {
    if (auto it = done_.find(name); it != done_.end()) {
      name = it->second;
      return true;
    }
    Tensor w = runtime::TensorFromProto(model_, *constants_.at(name));
    if (axis >= w.rank()) axis = -1;
    int64_t channels = axis < 0 ? 1 : w.dim(axis), inner = 1;
    for (int d = axis + 1; axis >= 0 && d < w.rank(); ++d) inner *= w.dim(d);
    Tensor scale(TP::FLOAT, axis < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{channels});
    Tensor q(TP::INT8, w.shape());
    const float* pw = w.data<float>();
    float* ps = scale.mutable_data<float>();
    std::vector<float> absmax(channels, 0.f);
    for (int64_t i = 0; i < w.size(); ++i) {
      int64_t c = (i / inner) % channels;
      absmax[c] = std::max(absmax[c], std::fabs(pw[i]));
    }
    for (int64_t c = 0; c < channels; ++c) ps[c] = absmax[c] > 0 ? absmax[c] / 127.f : 1.f;
    FitBias(ps, channels);
    int8_t* pq = q.mutable_data<int8_t>();
    for (int64_t i = 0; i < w.size(); ++i) {
      float v = std::nearbyint(pw[i] / ps[(i / inner) % channels]);
      pq[i] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
    }
    std::string out = name + "_DequantizeLinear_Output";
    Dequantize(name, q, scale, out, axis);
    weights_[name] = scale;
    if (options_.bias_correction) int8_weights_.emplace(name, q);
    replaced_.insert(name);
    ++result_.quantized_weights;
    done_[name] = out;
    name = out;
    return true;
  }

  // Bias fit: the smallest weight scale per output channel at which the int32 bias (at
  // x_scale * w_scale) does not saturate; empty without a constant bias or a range for x.
  std::vector<float> BiasFloor(const std::string& x, const std::string& bias) const {
    auto it = table_.tensors.find(x);
    if (it == table_.tensors.end() || !IsFloatConstant(bias)) return {};
    Tensor b = runtime::TensorFromProto(model_, *constants_.at(bias));
    if (b.rank() != 1) return {};
    const double xs = Params(it->second).scale;
    std::vector<float> floor(static_cast<size_t>(b.size()));
    for (int64_t c = 0; c < b.size(); ++c) {
      floor[c] = static_cast<float>(std::fabs(b.data<float>()[c]) / (xs * 2147483000.0));
    }
    return floor;
  }

  // Enlarges the weight scales under floor_ (as ONNX Runtime does) instead of clamping the bias:
  // a dead channel keeps its bias, and its near-zero weights round to zero either way.
  void FitBias(float* ps, int64_t channels) {
    if (floor_.empty()) return;
    int fitted = 0;
    for (int64_t c = 0; c < channels; ++c) {
      float need = 0;
      if (channels == static_cast<int64_t>(floor_.size())) {
        need = floor_[c];
      } else {
        for (float f : floor_) need = std::max(need, f);
      }
      if (need > ps[c]) ps[c] = need, ++fitted;
    }
    if (fitted > 0) {
      result_.notes.push_back(fmt::format(
          "bias fit: {} output channel(s) of {} got a larger weight scale so their int32 bias "
          "fits at input scale x weight scale (it would have saturated)",
          fitted, fit_node_));
    }
  }

  // Bias correction: the conv's bias becomes bias - (W~ - W) E[x] (bias_correction.h), a new
  // initializer so a bias another node shares is left as it was.
  void CorrectBias(onnx::NodeProto& n, const std::string& w) {
    auto means = options_.bias_correction->find(n.name());
    if (means == options_.bias_correction->end()) return;
    Tensor wf = runtime::TensorFromProto(model_, *constants_.at(w));
    if (wf.dtype() != TP::FLOAT || wf.rank() < 3) return;
    const std::vector<double> shift =
        MeanOutputShift(wf, DequantizedWeight(w, wf), ConvGroup(n), means->second);
    const bool has_bias = n.input_size() > 2 && !n.input(2).empty();
    if (has_bias && !IsFloatConstant(n.input(2))) return;
    Tensor b(TP::FLOAT, {wf.dim(0)});
    if (has_bias) {
      Tensor old = runtime::TensorFromProto(model_, *constants_.at(n.input(2)));
      if (old.dtype() != TP::FLOAT || old.size() != b.size()) return;
      std::copy_n(old.data<float>(), b.size(), b.mutable_data<float>());
      replaced_.insert(n.input(2));
    }
    for (int64_t c = 0; c < b.size(); ++c) {
      b.mutable_data<float>()[c] -= static_cast<float>(shift[c]);
    }
    const std::string name = AddInit(b, fmt::format("{}_bias_corrected", n.name()));
    constants_[name] = &g_.initializer(g_.initializer_size() - 1);
    while (n.input_size() < 3) n.add_input("");
    n.set_input(2, name);
    ++result_.bias_corrected;
  }

  // The float values of `w`'s int8 form, in `wf`'s shape.
  Tensor DequantizedWeight(const std::string& w, const Tensor& wf) const {
    const Tensor& q = int8_weights_.at(w);
    const Tensor& scale = weights_.at(w);
    Tensor out(TP::FLOAT, wf.shape());
    const int64_t channels = scale.size(), inner = wf.size() / std::max<int64_t>(1, wf.dim(0));
    for (int64_t i = 0; i < wf.size(); ++i) {
      const float s = scale.data<float>()[channels == 1 ? 0 : (i / inner) % channels];
      out.mutable_data<float>()[i] = q.data<int8_t>()[i] * s;
    }
    return out;
  }

  // int32 bias at scale x_scale * w_scale[c], so an integer kernel adds it to the accumulator.
  void Bias(std::string& name, const std::string& x, const Tensor& w_scale) {
    auto it = table_.tensors.find(x);
    if (it == table_.tensors.end() || done_.count(name)) return;
    Tensor b = runtime::TensorFromProto(model_, *constants_.at(name));
    if (b.rank() != 1 || (w_scale.size() != 1 && w_scale.size() != b.size())) return;
    Tensor scale(TP::FLOAT,
                 w_scale.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{b.size()});
    Tensor q(TP::INT32, b.shape());
    for (int64_t c = 0; c < scale.size(); ++c) {
      scale.mutable_data<float>()[c] =
          static_cast<float>(Params(it->second).scale) * w_scale.data<float>()[c];
    }
    for (int64_t c = 0; c < b.size(); ++c) {
      float s = scale.data<float>()[scale.size() == 1 ? 0 : c];
      // Saturate: a dead weight channel (tiny scale) must not wrap the int32 bias around.
      double v = std::nearbyint(b.data<float>()[c] / static_cast<double>(s));
      q.mutable_data<int32_t>()[c] =
          static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
    }
    std::string out = name + "_DequantizeLinear_Output";
    Dequantize(name, q, scale, out, scale.size() == 1 ? -1 : 0);
    replaced_.insert(name);
    done_[name] = out;
    name = out;
  }

  // New node list: each node's Q/DQ nodes just before it (its inputs exist by then), and the float
  // weights nothing reads any more dropped.
  void Assemble(std::vector<std::vector<onnx::NodeProto>>& before) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i < g_.node_size(); ++i) {
      for (auto& n : before[i]) *nodes.Add() = std::move(n);
      *nodes.Add() = g_.node(i);
    }
    g_.mutable_node()->Swap(&nodes);
    std::unordered_set<std::string> read;
    for (const auto& n : g_.node()) {
      for (const auto& in : n.input()) read.insert(in);
      for (const auto& c : ir::GraphView::CapturedNames(n)) read.insert(c);
    }
    for (const auto& o : g_.output()) read.insert(o.name());
    auto dead = [&](const std::string& name) { return replaced_.count(name) && !read.count(name); };
    auto* inits = g_.mutable_initializer();
    for (int i = inits->size() - 1; i >= 0; --i) {
      if (dead(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
    }
    auto* ns = g_.mutable_node();
    for (int i = ns->size() - 1; i >= 0; --i) {
      const auto& n = ns->Get(i);
      if (n.op_type() == "Constant" && n.output_size() == 1 && dead(n.output(0))) {
        ns->DeleteSubrange(i, 1);
      }
    }
  }

  io::Model& model_;
  onnx::GraphProto& g_;
  const CalibrationTable& table_;
  const QdqOptions& options_;
  std::string domain_;
  bool per_axis_ = false;
  int opset_ = 1;
  bool wide_ = false;         // the node being quantized takes 16-bit activations
  std::vector<float> floor_;  // bias fit of the conv being quantized (BiasFloor)
  std::string fit_node_;
  std::set<std::string> int16_;  // options_.int16_nodes
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::map<std::string, std::string> done_;     // float tensor -> its dequantized replacement
  std::map<std::string, Tensor> weights_;       // weight -> its scale
  std::map<std::string, Tensor> int8_weights_;  // weight -> its int8 values (bias correction)
  std::set<std::string> replaced_, missing_;
  std::vector<onnx::NodeProto>* pending_ = nullptr;
  QdqResult result_;
};

}  // namespace

const std::set<std::string>& QuantizableOps() {
  static const std::set<std::string> ops = {
      "Conv",          "ConvTranspose", "MatMul",  "Gemm",        "Add",
      "Mul",           "Concat",        "MaxPool", "AveragePool", "GlobalAveragePool",
      "GlobalMaxPool", "Resize",        "Upsample"};
  return ops;
}

std::set<std::string> QuantizableActivations(const onnx::GraphProto& graph) {
  std::set<std::string> constant = ConstantNames(graph);
  ir::GraphView view(graph);
  std::map<int, std::string> fused;  // never quantized, whatever the user excludes
  MarkPatterns(view, fused);
  MarkFusedElementwise(view, fused);
  std::set<std::string> out;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    if (!QuantizableOps().count(n.op_type()) || fused.count(i)) continue;
    for (const auto& in : n.input()) {
      if (!in.empty() && !constant.count(in)) out.insert(in);
    }
  }
  return out;
}

QdqResult InsertQdq(io::Model& model, const CalibrationTable& table, const QdqOptions& options) {
  return QdqBuilder(model, table, options).Run();
}

std::vector<const onnx::NodeProto*> QuantizedNodes(const onnx::GraphProto& graph) {
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : graph.node()) {
    for (const auto& in : n.input()) {
      if (util::EndsWith(in, "_DequantizeLinear_Output")) {
        nodes.push_back(&n);
        break;
      }
    }
  }
  return nodes;
}

}  // namespace porttool::quant
