#include "lib/emit/kit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/io/atomic_file.h"
#include "lib/io/input_file.h"
#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/sha256.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using runtime::Tensor;
using TP = onnx::TensorProto;
using util::ClosestNames;
using util::FormatBytes;
using util::Join;
using util::Sha256File;

// Ops that only move or select data: a correct kernel reproduces every bit.
const std::set<std::string> kDataMovement = {"Reshape",
                                             "Transpose",
                                             "Concat",
                                             "Slice",
                                             "Gather",
                                             "Split",
                                             "Squeeze",
                                             "Unsqueeze",
                                             "Flatten",
                                             "Identity",
                                             "Pad",
                                             "Expand",
                                             "Tile",
                                             "Shape",
                                             "Size",
                                             "DepthToSpace",
                                             "SpaceToDepth",
                                             "GatherElements",
                                             "ScatterND",
                                             "Relu",
                                             "MaxPool",
                                             "Constant",
                                             "ConstantOfShape",
                                             "Where",
                                             "Max",
                                             "Min",
                                             "Abs",
                                             "Neg",
                                             "Floor",
                                             "Ceil",
                                             "Round",
                                             "Equal",
                                             "Greater",
                                             "Less",
                                             "Not",
                                             "And",
                                             "Or",
                                             "Cast",
                                             "ArgMax",
                                             "TopK",
                                             "NonZero",
                                             "Range",
                                             "Clip"};
// Ops built on exp/log/erf/tanh/pow: libm differences reach well past float rounding.
const std::set<std::string> kTranscendental = {"Sigmoid",
                                               "Tanh",
                                               "Exp",
                                               "Log",
                                               "Erf",
                                               "Gelu",
                                               "FastGelu",
                                               "QuickGelu",
                                               "Softmax",
                                               "LogSoftmax",
                                               "Pow",
                                               "Softplus",
                                               "Elu",
                                               "Selu",
                                               "Celu",
                                               "Sin",
                                               "Cos",
                                               "Tan",
                                               "Atan",
                                               "Sqrt",
                                               "Reciprocal",
                                               "HardSigmoid",
                                               "HardSwish",
                                               "Mish",
                                               "LayerNormalization",
                                               "InstanceNormalization",
                                               "ReduceLogSumExp",
                                               "Resize"};

// Ops whose every output element is a sum of K products (+ a bias): float accumulation error grows
// with K and with the size of the terms, not with the result, so a near-cancelling element (a
// small sum of large terms) needs an atol scaled by the terms (see WithReductionBound).
const std::set<std::string> kReduction = {"Conv", "ConvTranspose", "MatMul", "Gemm"};

bool IsFloat(int32_t dtype) {
  return dtype == TP::FLOAT || dtype == TP::DOUBLE || dtype == TP::FLOAT16 || dtype == TP::BFLOAT16;
}

struct KitPlan {
  int node_index = -1;
  int64_t reduction_length = 0;       // kReduction ops only
  std::vector<double> max_abs_terms;  // per output, the largest over every test_data_set
  std::string dir;
  fs::path path;
  io::Model model;  // the single-node model
  int sets_written = 0;
  json info;  // kit.json under construction
  std::vector<std::string> notes;
};

std::string KitKey(const onnx::NodeProto& node, const std::vector<const Tensor*>& inputs) {
  std::string key = node.domain() + "::" + node.op_type();
  for (const auto& a : node.attribute()) key += "|" + a.SerializeAsString();
  for (const Tensor* t : inputs) key += "|" + (t ? t->DebugString() : std::string("none"));
  return key;
}

onnx::ValueInfoProto ValueInfoFor(const std::string& name, const Tensor& t) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(t.dtype());
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
  return vi;
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

// K, the number of products summed into one output element, +1 for a bias or Gemm's C. An upper
// bound where padding or ConvTranspose strides leave taps out, which only loosens the bound.
int64_t ReductionLength(const onnx::NodeProto& node, const std::vector<const Tensor*>& inputs) {
  auto dims = [&](size_t i) {
    return i < inputs.size() && inputs[i] ? inputs[i]->shape() : std::vector<int64_t>{};
  };
  const std::string& op = node.op_type();
  int64_t k = 1;
  if (op == "Conv" || op == "ConvTranspose") {
    // Conv W: [M, C/group, taps...]; ConvTranspose W: [C, M/group, taps...] sums over C/group.
    auto w = dims(1);
    for (size_t i = 2; i < w.size(); ++i) k *= w[i];
    if (w.size() >= 2) {
      k *= op == "Conv" ? w[1] : w[0] / std::max<int64_t>(1, IntAttribute(node, "group", 1));
    }
  } else if (op == "MatMul") {
    auto a = dims(0);
    k = a.empty() ? 1 : a.back();
  } else if (op == "Gemm") {
    auto a = dims(0);
    if (a.size() == 2) k = a[IntAttribute(node, "transA", 0) ? 0 : 1];
  }
  bool bias = inputs.size() > 2 && inputs[2] != nullptr;
  return k + (bias ? 1 : 0);
}

// Through the raw bytes: the typed accessors refuse an unsigned view of a float tensor.
template <typename T>
void ClearSignBits(Tensor& t, T mask) {
  T* v = static_cast<T*>(t.mutable_raw());
  for (int64_t i = 0; i < t.size(); ++i) v[i] &= mask;
}

// |t| for a float tensor, by clearing the IEEE sign bit (also bfloat16's); other dtypes as they
// are.
Tensor AbsFloat(const Tensor& t) {
  if (!IsFloat(t.dtype())) return t;
  Tensor out = t.Clone();
  switch (t.dtype()) {
    case TP::FLOAT:
      ClearSignBits<uint32_t>(out, 0x7fffffffu);
      break;
    case TP::DOUBLE:
      ClearSignBits<uint64_t>(out, 0x7fffffffffffffffull);
      break;
    default:  // FLOAT16, BFLOAT16
      ClearSignBits<uint16_t>(out, 0x7fffu);
  }
  return out;
}

// The single-node model: real inputs become graph inputs, constants stay initializers.
io::Model SingleNodeModel(const io::Model& source, const onnx::NodeProto& node,
                          const std::vector<const Tensor*>& inputs,
                          const std::set<std::string>& constants, const std::string& name) {
  io::Model kit;
  auto& p = kit.proto;
  p.set_ir_version(source.proto.ir_version());
  *p.mutable_opset_import() = source.proto.opset_import();
  p.set_producer_name("porttool kit");
  p.set_producer_version(PORTTOOL_VERSION);
  auto* g = p.mutable_graph();
  g->set_name(name);
  *g->add_node() = node;
  std::set<std::string> seen;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string& in = node.input(i);
    if (in.empty() || !seen.insert(in).second) continue;
    if (constants.count(in)) {
      *g->add_initializer() = runtime::TensorToProto(*inputs[i], in);
    } else {
      *g->add_input() = ValueInfoFor(in, *inputs[i]);
    }
  }
  for (const auto& out : node.output()) {
    if (!out.empty()) g->add_output()->set_name(out);
  }
  return kit;
}

// The kit's model with every float constant and float attribute (Gemm's alpha and beta) replaced
// by its absolute value. Each kReduction op is linear in each input, so this model run on |inputs|
// gives, per output element, the sum of the absolute values of the terms that element adds up.
io::Model AbsTermsModel(const io::Model& kit) {
  io::Model out = kit;
  auto* g = out.proto.mutable_graph();
  for (auto& init : *g->mutable_initializer()) {
    Tensor abs = AbsFloat(runtime::TensorFromProto(kit, init));
    init = runtime::TensorToProto(abs, init.name());
  }
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.type() == onnx::AttributeProto::FLOAT) a.set_f(std::fabs(a.f()));
    }
  }
  return out;
}

// Per output: the largest sum of |terms| over its elements, for one set of inputs.
std::vector<double> MaxAbsTerms(const io::Model& kit, const runtime::TensorMap& feeds,
                                const runtime::KernelRegistry* kernels) {
  runtime::TensorMap abs_feeds;
  for (const auto& [name, t] : feeds) abs_feeds[name] = AbsFloat(t);
  const io::Model abs_model = AbsTermsModel(kit);  // the session keeps a reference
  runtime::Session session(abs_model, {false, kernels});
  std::vector<double> out;
  for (const auto& o : session.Run(abs_feeds)) out.push_back(runtime::SummarizeValues(o.value).max);
  return out;
}

// Set 0's tensors read back from the kit: the header needs the final tolerance, known only once
// every set has run, and holding each kit's tensors until then would hold the model's activations.
std::vector<runtime::NamedTensor> ReadSet0(const fs::path& kit, const char* role, size_t count) {
  std::vector<runtime::NamedTensor> out;
  for (size_t i = 0; i < count; ++i) {
    std::string name;
    Tensor t = runtime::ReadPb(kit / "test_data_set_0" / fmt::format("{}_{}.pb", role, i), &name);
    out.push_back({name, std::move(t)});
  }
  return out;
}

double UnitRoundoff(int32_t dtype) {
  switch (dtype) {
    case TP::DOUBLE:
      return std::ldexp(1.0, -53);
    case TP::FLOAT16:
      return std::ldexp(1.0, -11);
    case TP::BFLOAT16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

json TensorInfo(const std::string& name, const Tensor& t) {
  return {{"name", name}, {"dtype", ir::DtypeName(t.dtype())}, {"shape", t.shape()}};
}

json AttributesJson(const onnx::NodeProto& node) {
  json attrs = json::object();
  for (const auto& a : node.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::FLOAT:
        attrs[a.name()] = a.f();
        break;
      case onnx::AttributeProto::INT:
        attrs[a.name()] = a.i();
        break;
      case onnx::AttributeProto::STRING:
        attrs[a.name()] = a.s();
        break;
      case onnx::AttributeProto::FLOATS:
        attrs[a.name()] = std::vector<float>(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::INTS:
        attrs[a.name()] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
        break;
      default:
        attrs[a.name()] = "(" + std::to_string(a.type()) + ")";
    }
  }
  return attrs;
}

std::string CLiteral(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case TP::FLOAT: {
      float v = t.data<float>()[i];
      if (std::isnan(v)) return "NAN";
      if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
      return fmt::format("{:a}f", v);
    }
    case TP::DOUBLE:
      return fmt::format("{:a}", t.data<double>()[i]);
    case TP::INT64: {
      int64_t v = t.data<int64_t>()[i];
      return v == INT64_MIN ? "(-9223372036854775807LL - 1)" : fmt::format("{}LL", v);
    }
    case TP::INT32:
      return fmt::format("{}", t.data<int32_t>()[i]);
    case TP::INT8:
      return fmt::format("{}", t.data<int8_t>()[i]);
    case TP::UINT8:
      return fmt::format("{}", t.data<uint8_t>()[i]);
    case TP::BOOL:
      return fmt::format("{}", static_cast<int>(t.data<bool>()[i]));
    default:
      return "0";
  }
}

void AppendArray(std::string& out, const std::string& prefix, const std::string& role, int index,
                 const std::string& name, const Tensor& t) {
  std::string id = fmt::format("{}_{}_{}", prefix, role, index);
  std::string upper = ToUpper(id);
  std::vector<std::string> dims;
  for (int64_t d : t.shape()) dims.push_back(std::to_string(d));
  out += fmt::format("/* {} {}: {} */\n", role, index, CommentText(name));
  out += fmt::format("#define {}_NAME {}\n#define {}_RANK {}\n#define {}_COUNT {}\n", upper,
                     CStringLiteral(name), upper, t.rank(), upper, t.size());
  out += fmt::format("static const int64_t {}_dims[{}] = {{{}}};\n", id, std::max(t.rank(), 1),
                     dims.empty() ? "1" : Join(dims, ", "));
  out += fmt::format("static const {} {}[{}] KIT_ALIGNED = {{", ir::DtypeCType(t.dtype()), id,
                     std::max<int64_t>(t.size(), 1));
  for (int64_t i = 0; i < t.size(); ++i) {
    out += (i % 8 == 0 ? "\n  " : " ") + CLiteral(t, i) + (i + 1 < t.size() ? "," : "");
  }
  out += t.size() == 0 ? "0};\n\n" : "\n};\n\n";
}

// The shortest literal that reads back as `v` (the number kit.json holds), always a double.
std::string CDouble(double v) {
  std::string s = fmt::format("{}", v);
  return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
}

std::string KitHeader(const KitPlan& kit, const std::vector<runtime::NamedTensor>& inputs,
                      const std::vector<runtime::NamedTensor>& outputs) {
  std::string prefix = SanitizeCIdentifier(ToLower(kit.dir));
  std::string guard = ToUpper(prefix) + "_KIT_H_";
  const json& tol = kit.info["tolerance"][0];
  std::string out = fmt::format(
      "/* Test kit {} (op {}, node {}), generated by porttool kit from a model with sha256 {}.\n"
      " * Inputs and expected outputs of test_data_set_0 as aligned arrays, for boards without a\n"
      " * file system. Compare with |got - want| <= atol + rtol * |want|. For Conv,\n"
      " * ConvTranspose, MatMul and Gemm, atol includes the float accumulation bound\n"
      " * (kit.json: tolerance). */\n"
      "#ifndef {}\n#define {}\n\n#include <math.h>\n#include <stdint.h>\n\n"
      "#if defined(__GNUC__) || defined(__clang__)\n#define KIT_ALIGNED "
      "__attribute__((aligned(64)))\n"
      "#else\n#define KIT_ALIGNED\n#endif\n\n",
      kit.dir, CommentText(kit.info["op"].get<std::string>()),
      CommentText(kit.info["node"].get<std::string>()),
      kit.info["source_sha256"].get<std::string>(), guard, guard);
  std::string upper = ToUpper(prefix);
  out += fmt::format("#define {}_NUM_INPUTS {}\n#define {}_NUM_OUTPUTS {}\n", upper, inputs.size(),
                     upper, outputs.size());
  out += fmt::format("#define {}_RTOL {}\n#define {}_ATOL {}\n\n", upper,
                     CDouble(tol["rtol"].get<double>()), upper, CDouble(tol["atol"].get<double>()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    AppendArray(out, prefix, "input", static_cast<int>(i), inputs[i].name, inputs[i].value);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    AppendArray(out, prefix, "output", static_cast<int>(i), outputs[i].name, outputs[i].value);
  }
  return out + "#endif /* " + guard + " */\n";
}

class KitWriter {
 public:
  KitWriter(const io::Model& model, const KitOptions& options, fs::path out_dir)
      : model_(model), options_(options), out_dir_(std::move(out_dir)) {
    sha256_ = model.path.empty() ? std::string() : Sha256File(model.path);
    const auto& g = model.proto.graph();
    if (options.select == KitOptions::Select::kNode) {
      node_index_ = ir::ResolveNodeRef(ir::GraphView(g), options.name, "kit node");
    }
    for (const auto& init : g.initializer()) constants_.insert(init.name());
    for (int i = 0; i < g.node_size(); ++i) {
      if (Selected(i)) {
        for (const auto& in : g.node(i).input()) ++pending_uses_[in];
      }
      for (const auto& out : g.node(i).output()) {
        if (!out.empty()) producer_.emplace(out, i);
      }
    }
  }

  void RunSample(int set, const runtime::TensorMap& feeds, runtime::Session& session) {
    set_ = set;
    feeds_ = &feeds;
    cache_.clear();
    ran_.clear();
    auto uses = pending_uses_;
    session.Run(feeds, [&](const std::string& name, const Tensor& value) {
      if (uses.count(name)) cache_[name] = value;
      auto it = producer_.find(name);
      if (it == producer_.end() || !ran_.insert(it->second).second) return;
      const auto& node = model_.proto.graph().node(it->second);
      if (!Selected(it->second)) return;
      OnNode(it->second);
      for (const auto& in : node.input()) {
        if (--uses[in] == 0) cache_.erase(in);
      }
    });
  }

  std::vector<KitSummary> Summaries() const {
    std::vector<KitSummary> out;
    for (const auto& kit : kits_) {
      out.push_back({kit.dir, kit.info["op"].get<std::string>(),
                     kit.info["node"].get<std::string>(), kit.notes});
    }
    return out;
  }
  bool Empty() const { return kits_.empty(); }
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  bool Selected(int index) const {
    switch (options_.select) {
      case KitOptions::Select::kNode:
        return index == node_index_;
      case KitOptions::Select::kOp:
        return model_.proto.graph().node(index).op_type() == options_.name;
      case KitOptions::Select::kAll:
        return true;
    }
    return false;
  }

  const Tensor* Lookup(const std::string& name) {
    if (auto it = cache_.find(name); it != cache_.end()) return &it->second;
    if (auto it = feeds_->find(name); it != feeds_->end()) return &it->second;
    if (constants_.count(name)) {
      auto [it, _] = initializers_.try_emplace(name);
      if (it->second.empty()) {
        for (const auto& init : model_.proto.graph().initializer()) {
          if (init.name() == name) it->second = runtime::TensorFromProto(model_, init);
        }
      }
      return &it->second;
    }
    ThrowInternal("kit: value '{}' was not captured", name);
  }

  void OnNode(int index) {
    const auto& node = model_.proto.graph().node(index);
    for (const auto& a : node.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) {
        if (set_ == 0) skipped_.push_back(ir::NodeLabel(node, index) + " (has a subgraph)");
        return;
      }
    }
    std::vector<const Tensor*> inputs;
    for (const auto& in : node.input()) inputs.push_back(in.empty() ? nullptr : Lookup(in));
    KitPlan* kit = nullptr;
    if (set_ == 0) {
      std::string key = KitKey(node, inputs);
      if (keys_.count(key)) return;
      keys_.insert(key);
      kit = &NewKit(index, inputs);
    } else {
      for (auto& k : kits_) {
        if (k.node_index == index) kit = &k;
      }
      if (kit == nullptr) return;
    }
    WriteSet(*kit, node, inputs);
  }

  KitPlan& NewKit(int index, const std::vector<const Tensor*>& inputs) {
    const auto& node = model_.proto.graph().node(index);
    KitPlan kit;
    kit.node_index = index;
    std::string base = SanitizeCIdentifier(
        node.op_type() + "_" + (node.name().empty() ? std::to_string(index) : node.name()));
    kit.dir = base;
    for (int n = 2; dir_names_.count(kit.dir); ++n) kit.dir = base + "_" + std::to_string(n);
    dir_names_.insert(kit.dir);
    kit.path = out_dir_ / kit.dir;
    kit.model = SingleNodeModel(model_, node, inputs, constants_, kit.dir);
    if (kReduction.count(node.op_type()) && (node.domain().empty() || node.domain() == "ai.onnx")) {
      kit.reduction_length = ReductionLength(node, inputs);
    }
    kit.info = {{"op", node.op_type()},
                {"domain", node.domain().empty() ? "ai.onnx" : node.domain()},
                {"node", ir::NodeLabel(node, index)},
                {"attributes", AttributesJson(node)},
                {"layout", "NCHW"},
                {"seed", options_.seed},
                {"inputs_from", options_.samples.empty() ? "model run on random inputs"
                                                         : "model run on the given samples"},
                {"source_model", model_.path.filename().string()},
                {"source_sha256", sha256_},
                {"generator", std::string("porttool ") + PORTTOOL_VERSION},
                {"inputs", json::array()},
                {"constants", json::array()},
                {"outputs", json::array()}};
    std::set<std::string> listed;
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty() || !listed.insert(node.input(i)).second) continue;
      kit.info[constants_.count(node.input(i)) ? "constants" : "inputs"].push_back(
          TensorInfo(node.input(i), *inputs[i]));
    }
    fs::create_directories(kit.path);
    kits_.push_back(std::move(kit));
    return kits_.back();
  }

  void WriteSet(KitPlan& kit, const onnx::NodeProto& node,
                const std::vector<const Tensor*>& inputs) {
    runtime::TensorMap feeds;
    std::vector<runtime::NamedTensor> in_list;
    for (const auto& vi : kit.model.proto.graph().input()) {
      for (int i = 0; i < node.input_size(); ++i) {
        if (node.input(i) == vi.name()) {
          feeds[vi.name()] = *inputs[i];
          in_list.push_back({vi.name(), *inputs[i]});
          break;
        }
      }
    }
    runtime::Session session(kit.model, {false, options_.kernels});
    auto outputs = session.Run(feeds);
    fs::path set_dir = kit.path / fmt::format("test_data_set_{}", set_);
    fs::create_directories(set_dir);
    for (size_t i = 0; i < in_list.size(); ++i) {
      runtime::WritePb(set_dir / fmt::format("input_{}.pb", i), in_list[i].value, in_list[i].name);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      runtime::WritePb(set_dir / fmt::format("output_{}.pb", i), outputs[i].value, outputs[i].name);
    }
    if (kit.reduction_length > 0) AccumulateAbsTerms(kit, feeds);
    if (set_ == 0) FinishKit(kit, in_list, outputs);
  }

  void AccumulateAbsTerms(KitPlan& kit, const runtime::TensorMap& feeds) {
    std::vector<double> m = MaxAbsTerms(kit.model, feeds, options_.kernels);
    kit.max_abs_terms.resize(m.size(), 0.0);
    for (size_t i = 0; i < m.size(); ++i) {
      kit.max_abs_terms[i] = std::max(kit.max_abs_terms[i], m[i]);
    }
  }

  // Set 0 fixes the outputs' types and whether the kit gets a C header; the header itself is
  // written with kit.json, once the tolerance is final.
  void FinishKit(KitPlan& kit, const std::vector<runtime::NamedTensor>& inputs,
                 const std::vector<runtime::NamedTensor>& outputs) {
    auto* g = kit.model.proto.mutable_graph();
    uint64_t bytes = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      *g->mutable_output(static_cast<int>(i)) = ValueInfoFor(outputs[i].name, outputs[i].value);
      kit.info["outputs"].push_back(TensorInfo(outputs[i].name, outputs[i].value));
      json tol = ToleranceFor(kit.info["op"].get<std::string>(), outputs[i].value.dtype());
      tol["output"] = outputs[i].name;
      kit.info["tolerance"].push_back(tol);
      bytes += outputs[i].value.bytes();
    }
    for (const auto& in : inputs) bytes += in.value.bytes();
    io::Save(kit.model, kit.path / "model.onnx");
    if (outputs.empty()) kit.info["tolerance"] = json::array({ToleranceFor("", TP::FLOAT)});
    if (bytes <= options_.header_max_bytes) {
      kit.info["header"] = "kit.h";
    } else {
      kit.info["header"] = nullptr;
      kit.notes.push_back(fmt::format("no C header: {} of tensors is over the {} limit",
                                      FormatBytes(bytes), FormatBytes(options_.header_max_bytes)));
    }
    kit.info["notes"] = kit.notes;
  }

 public:
  void WriteKitJson() {
    for (auto& kit : kits_) {
      kit.info["test_data_sets"] = set_ + 1;
      ApplyReductionBounds(kit);
      if (kit.info["header"].is_string()) {
        io::WriteFileAtomic(kit.path / "kit.h",
                            KitHeader(kit, ReadSet0(kit.path, "input", kit.info["inputs"].size()),
                                      ReadSet0(kit.path, "output", kit.info["outputs"].size())));
      }
      io::WriteFileAtomic(kit.path / "kit.json", util::DumpJson(kit.info, 2) + "\n");
    }
  }

 private:
  static void ApplyReductionBounds(KitPlan& kit) {
    json& tols = kit.info["tolerance"];
    for (size_t i = 0; i < kit.max_abs_terms.size() && i < tols.size(); ++i) {
      if (tols[i]["kind"] != "float-reduction") continue;
      tols[i] = WithReductionBound(tols[i], kit.reduction_length, kit.max_abs_terms[i]);
    }
  }

  const io::Model& model_;
  const KitOptions& options_;
  fs::path out_dir_;
  std::string sha256_;
  std::set<std::string> constants_;
  std::unordered_map<std::string, int> pending_uses_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, Tensor> cache_, initializers_;
  std::set<int> ran_;
  std::set<std::string> keys_, dir_names_;
  std::vector<KitPlan> kits_;
  std::vector<std::string> skipped_;
  const runtime::TensorMap* feeds_ = nullptr;
  int set_ = 0;
  int node_index_ = -1;  // with Select::kNode: the node options_.name addresses
};

void CheckSelection(const io::Model& model, const KitOptions& options) {
  if (options.select == KitOptions::Select::kAll) return;
  if (options.select == KitOptions::Select::kNode) {
    ir::ResolveNodeRef(ir::GraphView(model.proto.graph()), options.name, "kit node");
    return;
  }
  std::vector<std::string> pool;
  for (const auto& node : model.proto.graph().node()) {
    if (node.op_type() == options.name) return;
    pool.push_back(node.op_type());
  }
  auto close = ClosestNames(options.name, pool);
  ThrowUsage("no node of op type '{}' in the model's main graph{}", options.name,
             close.empty() ? "" : " (did you mean " + Join(close, ", ") + "?)");
}

json ReadJsonFile(const fs::path& path) {
  std::istringstream in(io::ReadInputFile(path, "kit file"));
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    ThrowBadInput("{}: not valid JSON: {}", path.string(), e.what());
  }
}

// The board's value for output `index` of set `set`, or an empty tensor when none was given.
Tensor FindOutput(const fs::path& dir, int set, int index, const std::string& name) {
  std::vector<fs::path> candidates = {dir / fmt::format("test_data_set_{}", set) /
                                      fmt::format("output_{}.pb", index)};
  if (set == 0) {
    std::string file = runtime::TensorFileNames({name}, "")[0];
    candidates.push_back(dir / fmt::format("output_{}.pb", index));
    candidates.push_back(dir / (file + ".pb"));
    candidates.push_back(dir / (file + ".npy"));
  }
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c)) return runtime::ReadTensorFile(c);
  }
  return Tensor();
}

// The element furthest outside |got - want| <= atol + rtol * |want| (relative to its bound), so
// the element named is the one that decides pass or fail.
std::string WorstElement(const Tensor& want, const Tensor& got, double rtol, double atol) {
  if (want.dtype() != TP::FLOAT || got.dtype() != TP::FLOAT || want.size() != got.size() ||
      want.size() == 0) {
    return "";
  }
  const float* a = want.data<float>();
  const float* b = got.data<float>();
  double worst = -1;
  int64_t at = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    double err = std::fabs(static_cast<double>(a[i]) - b[i]);
    double ratio = err / (atol + rtol * std::fabs(static_cast<double>(a[i])) + 1e-30);
    if (std::isnan(ratio)) ratio = INFINITY;
    if (ratio > worst) worst = ratio, at = i;
  }
  return fmt::format("worst element {}: want {:.9g} got {:.9g} ({:.3g}x the tolerance)", at, a[at],
                     b[at], worst);
}

void CheckOneKit(const fs::path& kit_dir, const fs::path& outputs_dir, KitCheckResult& result) {
  json info = ReadJsonFile(kit_dir / "kit.json");
  int sets = info.value("test_data_sets", 1);
  const json& outputs = info["outputs"];
  for (int set = 0; set < sets; ++set) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      KitCheckRow row{kit_dir.filename().string(), fmt::format("test_data_set_{}", set),
                      outputs[i]["name"].get<std::string>(), false, ""};
      const json& tol = info["tolerance"][i];
      Tensor want = runtime::ReadPb(kit_dir / row.set / fmt::format("output_{}.pb", i));
      Tensor got = FindOutput(outputs_dir, set, static_cast<int>(i), row.output);
      if (got.empty()) {
        row.detail = fmt::format("no output file in {}", outputs_dir.string());
      } else {
        auto stats = runtime::CompareTensors(want, got, tol["rtol"].get<double>(),
                                             tol["atol"].get<double>());
        row.passed = stats.comparable && stats.within_tolerance;
        row.detail = stats.comparable
                         ? fmt::format("max_abs {:.3g} ({} tolerance) {}", stats.max_abs,
                                       tol["kind"].get<std::string>(),
                                       WorstElement(want, got, tol["rtol"].get<double>(),
                                                    tol["atol"].get<double>()))
                         : stats.note;
      }
      (row.passed ? result.passed : result.failed)++;
      result.rows.push_back(std::move(row));
    }
  }
}

}  // namespace

json ToleranceFor(const std::string& op_type, int32_t dtype) {
  if (dtype == TP::INT8 || dtype == TP::UINT8) {
    return {{"kind", "int8"}, {"rtol", 0.0}, {"atol", 1.0}, {"note", "1 LSB"}};
  }
  if (!IsFloat(dtype) || kDataMovement.count(op_type)) {
    return {{"kind", "bitwise"}, {"rtol", 0.0}, {"atol", 0.0}};
  }
  if (kReduction.count(op_type)) {
    return {{"kind", "float-reduction"},
            {"rtol", 1e-3},
            {"atol", 1e-5},
            {"atol_base", 1e-5},
            {"unit_roundoff", UnitRoundoff(dtype)}};
  }
  if (kTranscendental.count(op_type)) {
    return {{"kind", "transcendental"}, {"rtol", 1e-3}, {"atol", 1e-4}};
  }
  return {{"kind", "float"}, {"rtol", 1e-3}, {"atol", 1e-5}};
}

json WithReductionBound(json tol, int64_t reduction_length, double max_abs_terms) {
  const double u = tol["unit_roundoff"].get<double>();
  tol["reduction_length"] = reduction_length;
  tol["max_abs_terms"] = max_abs_terms;
  tol["atol"] = tol["atol_base"].get<double>() +
                2 * std::sqrt(static_cast<double>(reduction_length)) * u * max_abs_terms;
  tol["rule"] = "atol = atol_base + 2 * sqrt(reduction_length) * unit_roundoff * max_abs_terms";
  tol["note"] =
      "a float sum of K terms is off by about sqrt(K) * u * sum|terms| (Higham & Mary 2019), "
      "however small the sum; max_abs_terms bounds sum|terms| over the output's elements; x2: "
      "the expected and the judged output both carry such an error";
  return tol;
}

std::vector<KitSummary> MakeKits(const io::Model& model, const KitOptions& options,
                                 const fs::path& out_dir) {
  CheckSelection(model, options);
  runtime::Session session(model, {false, options.kernels});
  std::vector<runtime::TensorMap> samples = options.samples;
  for (auto& s : samples) s = runtime::CompleteWithRandom(session, std::move(s), options.seed);
  if (samples.empty()) samples.push_back(runtime::RandomInputs(session, options.seed));
  fs::create_directories(out_dir);
  KitWriter writer(model, options, out_dir);
  for (size_t i = 0; i < samples.size(); ++i) {
    writer.RunSample(static_cast<int>(i), samples[i], session);
  }
  writer.WriteKitJson();
  auto summaries = writer.Summaries();
  if (!summaries.empty()) {
    for (const auto& s : writer.skipped()) summaries.front().notes.push_back("skipped " + s);
  }
  return summaries;
}

KitCheckResult CheckKits(const fs::path& kit_dir, const fs::path& outputs_dir) {
  if (!fs::is_directory(outputs_dir)) ThrowBadInput("{}: not a directory", outputs_dir.string());
  KitCheckResult result;
  if (fs::is_regular_file(kit_dir / "kit.json")) {
    CheckOneKit(kit_dir, outputs_dir, result);
    return result;
  }
  std::vector<fs::path> kits;
  if (fs::is_directory(kit_dir)) {
    for (const auto& folder : io::ListInputFolder(kit_dir, "kit folder").folders) {
      if (fs::is_regular_file(folder / "kit.json")) kits.push_back(folder);
    }
  }
  if (kits.empty()) ThrowBadInput("{}: no kit.json here or in its sub-folders", kit_dir.string());
  std::sort(kits.begin(), kits.end());
  for (const auto& k : kits) CheckOneKit(k, outputs_dir / k.filename(), result);
  return result;
}

}  // namespace porttool::emit
