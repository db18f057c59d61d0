// convert-fp16: stores the model in float16, as an fp16 accelerator (RK3588's NPU, a TensorRT fp16
// engine) keeps it, in a form ONNX Runtime's CPU provider runs.
//
// Before: (float x) w = float[...]; c = Conv(x, w); r = Reshape(c, shape); y = Sigmoid(r)
// After:  (float x) w = float16[...] (the same values rounded to nearest even)
//         x16 = Cast<to=FLOAT16>(x)                              (io=fp32: Casts at the edges)
//         x32 = Cast<to=FLOAT>(x16); w32 = Cast<to=FLOAT>(w)
//         c32 = Conv(x32, w32); c = Cast<to=FLOAT16>(c32)        (no fp16 Conv on ORT's CPU)
//         r = Reshape(c, shape)                                  (float16 kernel: stays float16)
//         r32 = Cast<to=FLOAT>(r); s32 = Sigmoid(r32); s = Cast<to=FLOAT16>(s32)
//         y = Cast<to=FLOAT>(s)
//
// Every float32 initializer and Constant value becomes float16, every float32 tensor between
// nodes becomes float16, and Cast(to=FLOAT) nodes cast to FLOAT16 instead. A node whose op
// ONNX Runtime's CPU provider cannot run in float16 (measured on ORT 1.31, x86-64: only data
// movement — Reshape, Transpose, Concat, Slice, Gather, ... — and Clip/Max/Min from opset 13 and
// Round have float16 kernels; Conv, MatMul, Add, Mul, Sigmoid... do not), or whose schema does
// not accept float16, or that holds an If/Loop/Scan body, or that `keep` names, runs in float32
// between Casts: its float inputs are cast to float32 (one shared Cast per tensor) and each float
// output is cast back to float16. So every tensor between nodes is rounded to float16 and every
// op computes in float32 inside, exactly what the executor's float16 mode
// (runtime::SessionOptions::float16) emulates — which is why the two agree within fp16 rounding.
// ORT would insert such Casts itself for a node without a float16 kernel, but it then merges
// adjacent fp32 nodes and drops the rounding between them; explicit Casts keep it.
// A node reading a constant whose magnitudes pass float16's 65504 is kept too, with a note (as
// inf the weight would wreck the output: fold BatchNormalization into its Conv first,
// fuse-conv-bn, and the weights usually fit). `keep` nodes read float32 weights: a constant read
// only by kept nodes stays float32, one read by both is duplicated. Graph inputs and outputs stay
// float32 with Casts at the edges (io=fp32, the default, like onnxconverter-common's keep_io_types)
// or become float16 (io=fp16). Int64 shapes and indices, and float64 and bfloat16 tensors, are left
// as they are (a note says so). If/Loop/ Scan bodies stay float32: their node is kept, and outer
// tensors they read are cast to float32. Why: an fp16 deployment computes what this model computes;
// ORT on it is an independent oracle for the executor's float16 mode.
#include "passes/convert_fp16.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "lib/ir/constants.h"
#include "lib/ir/rewrite.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::passes {
namespace {

using TP = onnx::TensorProto;

// Ops ONNX Runtime's CPU provider (1.31, x86-64) runs in float16, with the opsets that kernel
// covers. Measured by loading one-node float16 models at opsets 9, 11, 13 and 17 and looking for
// the Casts ORT inserts around nodes it has no float16 kernel for. Every one of these is exact in
// float16 (moves, selects or rounds values), so running them in float16 changes no value.
bool OrtRunsInFloat16(const std::string& op, int64_t opset) {
  static const std::set<std::string> kAlways = {"Concat",   "Expand",  "Flatten",   "Gather",
                                                "Identity", "Reshape", "Shape",     "Slice",
                                                "Split",    "Squeeze", "Transpose", "Unsqueeze"};
  if (kAlways.count(op)) return true;
  if (op == "Clip" || op == "Max" || op == "Min") return opset >= 13;
  if (op == "Round") return opset >= 11;
  if (op == "Dropout") return opset <= 12;
  return false;
}

// Whether `node`'s schema at `opset` accepts float16 at every input currently float32.
bool SchemaAcceptsFloat16(const onnx::NodeProto& node, int64_t opset,
                          const std::vector<bool>& float_inputs) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
  if (!schema) return false;
  const auto& formals = schema->inputs();
  for (size_t i = 0; i < float_inputs.size(); ++i) {
    if (!float_inputs[i]) continue;
    if (formals.empty()) return false;
    const auto& formal = formals[std::min(i, formals.size() - 1)];
    const auto& types = formal.GetTypes();
    if (std::none_of(types.begin(), types.end(),
                     [](const std::string* t) { return *t == "tensor(float16)"; })) {
      return false;
    }
  }
  return true;
}

bool HasBody(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

// Names a body (and the bodies below it) reads from the scopes outside it.
void CollectCaptures(const onnx::GraphProto& body, std::unordered_set<std::string> defined,
                     std::set<std::string>& out) {
  for (const auto& i : body.input()) defined.insert(i.name());
  for (const auto& i : body.initializer()) defined.insert(i.name());
  for (const auto& n : body.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !defined.count(in)) out.insert(in);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectCaptures(a.g(), defined, out);
      for (const auto& g : a.graphs()) CollectCaptures(g, defined, out);
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& o : body.output()) {
    if (!defined.count(o.name())) out.insert(o.name());
  }
}

// The element type of every main-graph tensor ONNX type inference can tell, from a copy (the
// model itself keeps its value_info as it is).
std::unordered_map<std::string, int32_t> ElementTypes(const io::Model& model) {
  io::Model copy = model;
  shape::InferOptions infer;
  try {
    shape::InferShapes(copy, infer);
  } catch (const Error&) {
    // partial types are still useful; a float tensor left untyped is reported below
  }
  std::unordered_map<std::string, int32_t> types;
  const auto& g = copy.proto.graph();
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() != TP::UNDEFINED) {
      types.emplace(vi.name(), vi.type().tensor_type().elem_type());
    }
  };
  for (const auto& vi : g.input()) add(vi);
  for (const auto& vi : g.output()) add(vi);
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& t : g.initializer()) types.emplace(t.name(), t.data_type());
  for (const auto& n : g.node()) {
    if (!ir::IsConstantNode(n)) continue;
    if (auto v = ir::ConstantNodeValue(n)) types.emplace(n.output(0), v->data_type());
  }
  return types;
}

// `t` (float32) as a float16 TensorProto with the same name and dims. `max_abs` receives the
// largest finite magnitude, for the overflow note.
TP ToFloat16(const io::Model& model, const TP& t, float* max_abs) {
  runtime::Tensor value = runtime::TensorFromProto(model, t);
  TP out;
  out.set_name(t.name());
  out.set_data_type(TP::FLOAT16);
  for (auto d : t.dims()) out.add_dims(d);
  std::string raw(static_cast<size_t>(value.size()) * 2, '\0');
  const float* p = value.data<float>();
  float biggest = 0;
  for (int64_t i = 0; i < value.size(); ++i) {
    if (std::isfinite(p[i])) biggest = std::max(biggest, std::fabs(p[i]));
    uint16_t h = runtime::FloatToHalf(p[i]);
    raw[2 * i] = static_cast<char>(h & 0xff);
    raw[2 * i + 1] = static_cast<char>(h >> 8);
  }
  out.set_raw_data(std::move(raw));
  if (!t.doc_string().empty()) out.set_doc_string(t.doc_string());
  *max_abs = biggest;
  return out;
}

onnx::NodeProto MakeCast(const std::string& name, const std::string& in, const std::string& out,
                         int32_t to) {
  onnx::NodeProto n;
  n.set_op_type("Cast");
  n.set_name(name);
  n.add_input(in);
  n.add_output(out);
  auto* a = n.add_attribute();
  a->set_name("to");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(to);
  return n;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

class Converter {
 public:
  Converter(io::Model& model, bool io_fp16, std::set<std::string> keep)
      : model_(model),
        graph_(*model.proto.mutable_graph()),
        io_fp16_(io_fp16),
        keep_(std::move(keep)),
        names_(graph_),
        opset_(ir::OnnxOpset(model.proto)) {}

  PassResult Convert() {
    types_ = ElementTypes(model_);
    for (const auto& i : graph_.input()) graph_inputs_.insert(i.name());
    for (const auto& n : graph_.node()) {
      for (const auto& in : n.input()) consumers_[in].push_back(&n);
    }
    CheckTypesKnown();
    KeepOverflowingReaders();
    ConvertConstants();
    RewriteNodes();
    ConvertEdges();
    UpdateValueInfo();
    Summarise();
    return std::move(result_);
  }

 private:
  bool IsFloat(const std::string& tensor) const {
    auto it = types_.find(tensor);
    return !tensor.empty() && it != types_.end() && it->second == TP::FLOAT;
  }
  bool Kept(const onnx::NodeProto& n) const { return keep_.count(n.name()) > 0; }

  // A float input or output with no inferred type would be left float32 between float16 tensors.
  void CheckTypesKnown() {
    for (const auto& n : graph_.node()) {
      for (const auto& out : n.output()) {
        if (!out.empty() && !types_.count(out)) {
          throw Error(ErrorKind::kBadInput,
                      fmt::format("convert-fp16: the element type of '{}' ({} '{}') is unknown to "
                                  "ONNX type inference, so it cannot tell whether it is float32",
                                  out, n.op_type(), n.name()),
                      n.name());
        }
      }
    }
    for (const auto& [name, type] : types_) {
      if (type == TP::DOUBLE || type == TP::BFLOAT16) ++left_alone_;
    }
  }

  // A node reading a float32 constant with magnitudes past float16's 65504 is kept in float32
  // (an infinite weight is never what a deployment wants: PP-OCRv4 det's head has a
  // BatchNormalization variance of 9.8e7, which as inf zeroes the map). Named in a note.
  void KeepOverflowingReaders() {
    auto check = [&](const std::string& name, const TP& value) {
      if (value.data_type() != TP::FLOAT || graph_inputs_.count(name)) return;
      runtime::Tensor t = runtime::TensorFromProto(model_, value);
      float biggest = 0;
      const float* p = t.data<float>();
      for (int64_t i = 0; i < t.size(); ++i) {
        if (std::isfinite(p[i])) biggest = std::max(biggest, std::fabs(p[i]));
      }
      if (biggest <= 65504.0f) return;
      auto it = consumers_.find(name);
      if (it == consumers_.end()) return;
      for (const auto* n : it->second) {
        if (keep_.count(n->name()) && !auto_kept_.count(n->name())) continue;
        if (n->name().empty()) {
          ThrowBadInput(
              "convert-fp16: an unnamed {} node reads '{}' whose |x| reaches {:g}, past float16's "
              "65504; name the nodes first (name-nodes) so it can be kept in float32",
              n->op_type(), name, biggest);
        }
        keep_.insert(n->name());
        auto_kept_.insert(n->name());
        result_.notes.push_back(fmt::format(
            "kept {} '{}' in float32: it reads '{}' whose |x| reaches {:g}, past float16's 65504",
            n->op_type(), n->name(), name, biggest));
      }
    };
    for (const auto& t : graph_.initializer()) check(t.name(), t);
    for (const auto& n : graph_.node()) {
      if (!ir::IsConstantNode(n)) continue;
      if (auto v = ir::ConstantNodeValue(n)) check(n.output(0), *v);
    }
  }

  bool ReadByNothing(const std::string& tensor) const {
    if (consumers_.count(tensor)) return false;
    for (const auto& o : graph_.output()) {
      if (o.name() == tensor) return false;
    }
    return true;
  }

  // Whether every reader of `tensor` is a kept node (and there is at least one).
  bool OnlyKeptRead(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return false;
    for (const auto* n : it->second) {
      if (!Kept(*n)) return false;
    }
    return true;
  }
  bool SomeKeptRead(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const onnx::NodeProto* n) { return Kept(*n); });
  }

  // Only for a weight something reads (a reader would have been kept): a graph output, or one
  // left unread by an earlier pass (fuse-conv-bn leaves the folded BatchNormalization's).
  void NoteOverflow(const std::string& tensor, float max_abs) {
    if (max_abs > 65504.0f && !ReadByNothing(tensor)) {
      result_.notes.push_back(fmt::format(
          "weight '{}' has |x| up to {:g} > 65504, the float16 maximum: those values are inf",
          tensor, max_abs));
    }
  }

  // Float32 initializers (not graph inputs) and Constant values become float16; one read only by
  // kept nodes stays float32, one read by both keeps a float32 copy for the kept readers.
  void ConvertConstants() {
    for (auto& t : *graph_.mutable_initializer()) {
      if (t.data_type() != TP::FLOAT || graph_inputs_.count(t.name())) continue;
      if (OnlyKeptRead(t.name())) {
        fp32_constants_.insert(t.name());
        continue;
      }
      if (SomeKeptRead(t.name())) {
        TP copy = t;
        std::string name = names_.Tensor(t.name() + "_fp32");
        copy.set_name(name);
        kept_copies_[t.name()] = name;
        fp32_constants_.insert(name);
        new_initializers_.push_back(std::move(copy));
      }
      float max_abs = 0;
      t = ToFloat16(model_, t, &max_abs);
      NoteOverflow(t.name(), max_abs);
      ++constants_;
    }
    for (auto& copy : new_initializers_) *graph_.add_initializer() = std::move(copy);
    std::vector<onnx::NodeProto> copies;
    for (auto& n : *graph_.mutable_node()) {
      if (!ir::IsConstantNode(n) || !IsFloat(n.output(0)) || Kept(n)) continue;
      const std::string out = n.output(0);
      auto value = ir::ConstantNodeValue(n);
      if (!value || value->data_type() != TP::FLOAT) continue;  // sparse: wrapped below
      if (OnlyKeptRead(out)) {
        fp32_constants_.insert(out);
        continue;
      }
      if (SomeKeptRead(out)) {
        onnx::NodeProto copy = n;
        std::string name = names_.Tensor(out + "_fp32");
        copy.set_output(0, name);
        copy.set_name(names_.Node(n.name().empty() ? name : n.name() + "_fp32"));
        kept_copies_[out] = name;
        fp32_constants_.insert(name);
        copies.push_back(std::move(copy));
      }
      float max_abs = 0;
      TP half = ToFloat16(model_, *value, &max_abs);
      half.clear_name();
      NoteOverflow(out, max_abs);
      n.clear_attribute();
      auto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = std::move(half);
      converted_constants_.insert(out);
      ++constants_;
    }
    // The float32 copies go first: they read nothing.
    if (!copies.empty()) {
      google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
      for (auto& c : copies) *nodes.Add() = std::move(c);
      for (auto& n : *graph_.mutable_node()) *nodes.Add() = std::move(n);
      graph_.mutable_node()->Swap(&nodes);
    }
  }

  // Whether `n` must run in float32 between Casts: kept, a body holder, or an op ORT's CPU
  // provider (or the schema) cannot take in float16. Nodes touching no float32 tensor are left.
  bool NeedsFloat32(const onnx::NodeProto& n, bool* touches_float) const {
    std::vector<bool> float_inputs;
    bool any = false;
    for (const auto& in : n.input()) {
      float_inputs.push_back(IsFloat(in) && !fp32_constants_.count(in));
      any |= float_inputs.back();
    }
    for (const auto& out : n.output()) any |= IsFloat(out);
    std::set<std::string> captures;
    if (HasBody(n)) {
      for (const auto& a : n.attribute()) {
        if (a.has_g()) CollectCaptures(a.g(), {}, captures);
        for (const auto& g : a.graphs()) CollectCaptures(g, {}, captures);
      }
      for (const auto& c : captures) any |= IsFloat(c);
    }
    *touches_float = any;
    if (!any) return false;
    if (Kept(n) || HasBody(n) || !ir::IsOnnxDomain(n.domain())) return true;
    if (n.op_type() == "Cast") return false;
    if (ir::IsConstantNode(n)) return true;  // a sparse float value, or a kept Constant
    return !OrtRunsInFloat16(n.op_type(), opset_) || !SchemaAcceptsFloat16(n, opset_, float_inputs);
  }

  // The float32 version of float16 tensor `t`: one shared Cast per tensor.
  std::string Float32Of(const std::string& t, std::vector<onnx::NodeProto>& emit) {
    auto it = fp32_of_.find(t);
    if (it != fp32_of_.end()) return it->second;
    std::string name = names_.Tensor(t + "_fp32");
    emit.push_back(MakeCast(names_.Node(name + "_cast"), t, name, TP::FLOAT));
    ++casts_;
    fp32_of_[t] = name;
    return name;
  }

  void RewriteNodes() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (auto& n : *graph_.mutable_node()) {
      bool touches = false;
      bool wrap = NeedsFloat32(n, &touches);
      // Constants converted above, or float32 ones kept for kept readers, are done.
      bool done = ir::IsConstantNode(n) &&
                  (converted_constants_.count(n.output(0)) || fp32_constants_.count(n.output(0)));
      if (!touches || done) {
        *nodes.Add() = std::move(n);
        continue;
      }
      if (!wrap) {
        if (n.op_type() == "Cast") {
          for (auto& a : *n.mutable_attribute()) {
            if (a.name() == "to" && a.i() == TP::FLOAT) {
              a.set_i(TP::FLOAT16);
              ++retargeted_casts_;
            }
          }
        }
        ++in_fp16_;
        *nodes.Add() = std::move(n);
        continue;
      }
      std::vector<onnx::NodeProto> before, after;
      for (int i = 0; i < n.input_size(); ++i) {
        const std::string in = n.input(i);
        if (Kept(n) && kept_copies_.count(in)) {
          n.set_input(i, kept_copies_.at(in));
        } else if (IsFloat(in) && !fp32_constants_.count(in)) {
          n.set_input(i, Float32Of(in, before));
        }
      }
      if (HasBody(n)) {
        std::set<std::string> captures;
        for (const auto& a : n.attribute()) {
          if (a.has_g()) CollectCaptures(a.g(), {}, captures);
          for (const auto& g : a.graphs()) CollectCaptures(g, {}, captures);
        }
        std::unordered_map<std::string, std::string> renames;
        for (const auto& c : captures) {
          if (IsFloat(c) && !fp32_constants_.count(c)) renames[c] = Float32Of(c, before);
        }
        for (auto& a : *n.mutable_attribute()) {
          if (a.has_g()) ir::RenameReads(*a.mutable_g(), renames);
          for (auto& g : *a.mutable_graphs()) ir::RenameReads(g, renames);
        }
      }
      for (int i = 0; i < n.output_size(); ++i) {
        const std::string out = n.output(i);
        if (!IsFloat(out)) continue;
        std::string name = names_.Tensor(out + "_fp32");
        n.set_output(i, name);
        after.push_back(MakeCast(names_.Node(out + "_cast"), name, out, TP::FLOAT16));
        ++casts_;
      }
      ++in_fp32_;
      if (Kept(n)) ++kept_;
      for (auto& c : before) *nodes.Add() = std::move(c);
      *nodes.Add() = std::move(n);
      for (auto& c : after) *nodes.Add() = std::move(c);
    }
    graph_.mutable_node()->Swap(&nodes);
  }

  // io=fp32: float32 graph inputs are cast to float16 for the graph, outputs cast back; io=fp16:
  // their types change.
  void ConvertEdges() {
    std::unordered_set<std::string> inputs_set;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> front;
    for (auto& vi : *graph_.mutable_input()) {
      inputs_set.insert(vi.name());
      if (vi.type().tensor_type().elem_type() != TP::FLOAT) continue;
      if (io_fp16_) {
        vi.mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT16);
        for (auto& t : *graph_.mutable_initializer()) {  // a default value follows its input
          if (t.name() == vi.name() && t.data_type() == TP::FLOAT) {
            float max_abs = 0;
            t = ToFloat16(model_, t, &max_abs);
          }
        }
        continue;
      }
      std::string name = names_.Tensor(vi.name() + "_fp16");
      if (ir::ReplaceAllUses(graph_, vi.name(), name) == 0) continue;
      *front.Add() = MakeCast(names_.Node(name + "_cast"), vi.name(), name, TP::FLOAT16);
      ++casts_;
    }
    if (!front.empty()) {
      for (auto& n : *graph_.mutable_node()) *front.Add() = std::move(n);
      graph_.mutable_node()->Swap(&front);
    }
    for (auto& vi : *graph_.mutable_output()) {
      if (vi.type().tensor_type().elem_type() != TP::FLOAT) continue;
      if (inputs_set.count(vi.name())) continue;  // an input passed through stays as it is
      if (fp32_constants_.count(vi.name())) continue;
      if (io_fp16_) {
        vi.mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT16);
        continue;
      }
      std::string name = names_.Tensor(vi.name() + "_fp16");
      bool produced = false;
      for (auto& n : *graph_.mutable_node()) {
        for (auto& o : *n.mutable_output()) {
          if (o == vi.name()) {
            o = name;
            produced = true;
          }
        }
      }
      for (auto& t : *graph_.mutable_initializer()) {
        if (t.name() == vi.name()) {
          t.set_name(name);
          produced = true;
        }
      }
      if (!produced) continue;
      ir::ReplaceAllUses(graph_, vi.name(), name);
      graph_.mutable_node()->Add(
          MakeCast(names_.Node(vi.name() + "_to_fp32"), name, vi.name(), TP::FLOAT));
      ++casts_;
    }
  }

  // value_info of converted tensors says float16; the graph's own inputs and outputs are set by
  // ConvertEdges.
  void UpdateValueInfo() {
    std::unordered_set<std::string> io;
    for (const auto& vi : graph_.input()) io.insert(vi.name());
    for (const auto& vi : graph_.output()) io.insert(vi.name());
    auto* infos = graph_.mutable_value_info();
    for (int i = infos->size() - 1; i >= 0; --i) {
      auto& vi = *infos->Mutable(i);
      if (!vi.type().has_tensor_type() || vi.type().tensor_type().elem_type() != TP::FLOAT) {
        continue;
      }
      if (io.count(vi.name()) || fp32_constants_.count(vi.name())) {
        infos->DeleteSubrange(i, 1);
        continue;
      }
      vi.mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT16);
    }
  }

  void Summarise() {
    result_.changes = constants_ + in_fp16_ + in_fp32_ + casts_;
    if (result_.changes == 0) return;
    result_.notes.push_back(fmt::format(
        "{} float32 constants now float16; {} nodes run in float16, {} in float32 between Casts "
        "({} of them kept by keep=, {} for an overflowing weight); {} Casts added, {} Cast nodes "
        "now cast to float16; graph inputs and outputs {}",
        constants_, in_fp16_, in_fp32_, kept_ - static_cast<int>(auto_kept_.size()),
        auto_kept_.size(), casts_, retargeted_casts_,
        io_fp16_ ? "float16" : "float32 (Casts at the edges)"));
    if (left_alone_ > 0) {
      result_.notes.push_back(
          fmt::format("{} float64/bfloat16 tensors left as they are", left_alone_));
    }
  }

  io::Model& model_;
  onnx::GraphProto& graph_;
  bool io_fp16_;
  std::set<std::string> keep_;
  std::set<std::string> auto_kept_;  // kept because a weight they read overflows float16
  ir::NameGenerator names_;
  int64_t opset_;
  std::unordered_map<std::string, int32_t> types_;
  std::unordered_set<std::string> graph_inputs_;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::unordered_set<std::string> fp32_constants_;  // float32 constants read by kept nodes only
  std::unordered_map<std::string, std::string> kept_copies_;  // converted -> its float32 copy
  std::vector<TP> new_initializers_;
  std::unordered_set<std::string> converted_constants_;  // Constant outputs now float16
  std::unordered_map<std::string, std::string> fp32_of_;
  int constants_ = 0, in_fp16_ = 0, in_fp32_ = 0, kept_ = 0, casts_ = 0, retargeted_casts_ = 0;
  int left_alone_ = 0;
  PassResult result_;
};

}  // namespace

PassResult ConvertFp16Pass::Run(io::Model& model, const PassOptions& options, PassContext&) const {
  std::string io = options.Get("io", "fp32");
  if (io != "fp32" && io != "fp16") {
    ThrowUsage("convert-fp16: io={} is not fp32 or fp16", io);
  }
  std::set<std::string> keep;
  for (const auto& name : SplitList(options.Get("keep"))) keep.insert(name);
  std::set<std::string> missing = keep;
  for (const auto& n : model.proto.graph().node()) missing.erase(n.name());
  if (!missing.empty()) {
    ThrowUsage("convert-fp16: keep= names no node of the main graph: {}",
               util::Join(std::vector<std::string>(missing.begin(), missing.end()), ", "));
  }
  return Converter(model, io == "fp16", std::move(keep)).Convert();
}

}  // namespace porttool::passes
