#include "tools/fuzz/model_mutator.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace porttool::fuzz {
namespace {

using Rng = std::mt19937;

template <typename T, size_t N>
const T& PickFrom(Rng& rng, const T (&items)[N]) {
  return items[rng() % N];
}
template <typename T>
T& PickFrom(Rng& rng, std::vector<T>& items) {
  return items[rng() % items.size()];
}

// Values at the edges of what inference and kernels assume (zero, negative, int32/int64 limits,
// the attribute rules' bounds).
constexpr int64_t kInts[] = {0,
                             1,
                             -1,
                             2,
                             3,
                             -2,
                             4096,
                             4097,
                             int64_t{1} << 31,
                             int64_t{1} << 32,
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::min()};
const float kFloats[] = {0.0f,
                         -0.0f,
                         1.0f,
                         -1.0f,
                         0.5f,
                         1e30f,
                         1e-30f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN()};
const char* const kStrings[] = {
    "",       "constant",   "reflect",    "edge",       "nearest",    "linear",
    "cubic",  "DCR",        "CRD",        "half_pixel", "asymmetric", "align_corners",
    "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID",      "floor",      "ceil",
    "tanh",   "none",       "ij,jk->ik",  "...ii->...i"};
const char* const kAttrNames[] = {"axis",
                                  "axes",
                                  "perm",
                                  "strides",
                                  "dilations",
                                  "kernel_shape",
                                  "pads",
                                  "group",
                                  "blocksize",
                                  "split",
                                  "k",
                                  "size",
                                  "to",
                                  "keepdims",
                                  "transA",
                                  "transB",
                                  "alpha",
                                  "beta",
                                  "mode",
                                  "scales",
                                  "output_padding",
                                  "output_shape",
                                  "auto_pad",
                                  "ceil_mode",
                                  "value",
                                  "largest",
                                  "sorted",
                                  "exclusive",
                                  "reverse",
                                  "batch_dims",
                                  "spatial_scale",
                                  "sampling_ratio",
                                  "output_height",
                                  "output_width",
                                  "epsilon",
                                  "momentum",
                                  "select_last_index",
                                  "direction",
                                  "hidden_size",
                                  "num_outputs",
                                  "detect_positive",
                                  "equation"};

int64_t SomeInt(Rng& rng) { return rng() % 3 == 0 ? int64_t(rng() % 9) - 4 : PickFrom(rng, kInts); }

std::vector<onnx::GraphProto*> Graphs(onnx::GraphProto* g) {
  std::vector<onnx::GraphProto*> out = {g};
  for (size_t i = 0; i < out.size(); ++i) {
    for (auto& node : *out[i]->mutable_node()) {
      for (auto& a : *node.mutable_attribute()) {
        if (a.has_g()) out.push_back(a.mutable_g());
        for (auto& sub : *a.mutable_graphs()) out.push_back(&sub);
      }
    }
  }
  return out;
}

onnx::NodeProto* SomeNode(Rng& rng, std::vector<onnx::GraphProto*>& graphs) {
  std::vector<onnx::NodeProto*> nodes;
  for (auto* g : graphs) {
    for (auto& n : *g->mutable_node()) nodes.push_back(&n);
  }
  return nodes.empty() ? nullptr : PickFrom(rng, nodes);
}

void MutateAttributeValue(Rng& rng, onnx::AttributeProto& a) {
  if (rng() % 10 == 0) {  // type confusion: the same name with another type
    a.set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 15));
    return;
  }
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      // A neighbour of the value, wrapping at the int64 limits (no signed overflow).
      a.set_i(rng() % 4 == 0 ? static_cast<int64_t>(static_cast<uint64_t>(a.i()) +
                                                    (rng() % 2 ? 1u : ~uint64_t{0}))
                             : SomeInt(rng));
      break;
    case onnx::AttributeProto::FLOAT:
      a.set_f(PickFrom(rng, kFloats));
      break;
    case onnx::AttributeProto::STRING:
      a.set_s(PickFrom(rng, kStrings));
      break;
    case onnx::AttributeProto::INTS:
      switch (rng() % 4) {
        case 0:
          a.add_ints(SomeInt(rng));
          break;
        case 1:
          if (a.ints_size() > 0) a.mutable_ints()->RemoveLast();
          break;
        default:
          if (a.ints_size() > 0)
            a.set_ints(rng() % a.ints_size(), SomeInt(rng));
          else
            a.add_ints(SomeInt(rng));
      }
      break;
    case onnx::AttributeProto::FLOATS:
      if (a.floats_size() > 0 && rng() % 2) {
        a.set_floats(rng() % a.floats_size(), PickFrom(rng, kFloats));
      } else {
        a.add_floats(PickFrom(rng, kFloats));
      }
      break;
    default:
      a.set_i(SomeInt(rng));
  }
}

void AddAttribute(Rng& rng, onnx::NodeProto& node) {
  auto* a = node.add_attribute();
  a->set_name(PickFrom(rng, kAttrNames));
  switch (rng() % 4) {
    case 0:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(SomeInt(rng));
      break;
    case 1: {
      a->set_type(onnx::AttributeProto::INTS);
      int n = static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) a->add_ints(SomeInt(rng));
      break;
    }
    case 2:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(PickFrom(rng, kFloats));
      break;
    default:
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(PickFrom(rng, kStrings));
  }
}

std::vector<std::string> TensorNames(const onnx::GraphProto& g) {
  std::vector<std::string> names = {"", "undefined_tensor"};
  for (const auto& vi : g.input()) names.push_back(vi.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) names.push_back(o);
  }
  return names;
}

void Rewire(Rng& rng, onnx::GraphProto& g) {
  if (g.node_size() == 0) return;
  auto names = TensorNames(g);
  auto& node = *g.mutable_node(rng() % g.node_size());
  switch (rng() % 4) {
    case 0:
      node.add_input(PickFrom(rng, names));
      break;
    case 1:
      if (node.output_size() > 0) node.set_output(rng() % node.output_size(), PickFrom(rng, names));
      break;
    case 2:
      if (node.input_size() > 0) node.mutable_input()->RemoveLast();
      break;
    default:
      if (node.input_size() > 0)
        node.set_input(rng() % node.input_size(), PickFrom(rng, names));
      else
        node.add_input(PickFrom(rng, names));
  }
}

void ChangeOpType(Rng& rng, onnx::NodeProto& node) {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas()) {
      if (s.domain().empty()) v.push_back(s.Name());
    }
    return v;
  }();
  if (!ops.empty()) node.set_op_type(ops[rng() % ops.size()]);
}

void MutateDims(Rng& rng, onnx::GraphProto& g) {
  std::vector<onnx::TensorShapeProto*> shapes;
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (auto& vi : *list) {
      if (vi.type().has_tensor_type()) {
        shapes.push_back(vi.mutable_type()->mutable_tensor_type()->mutable_shape());
      }
    }
  }
  if (!shapes.empty() && (g.initializer_size() == 0 || rng() % 2)) {
    auto& shape = *PickFrom(rng, shapes);
    if (shape.dim_size() == 0 || rng() % 4 == 0) {
      shape.add_dim()->set_dim_value(SomeInt(rng));
    } else if (rng() % 5 == 0) {
      shape.mutable_dim()->RemoveLast();
    } else {
      auto& d = *shape.mutable_dim(rng() % shape.dim_size());
      if (rng() % 4 == 0)
        d.set_dim_param("N");
      else
        d.set_dim_value(SomeInt(rng));
    }
  } else if (g.initializer_size() > 0) {
    auto& t = *g.mutable_initializer(rng() % g.initializer_size());
    if (t.dims_size() == 0 || rng() % 3 == 0)
      t.add_dims(SomeInt(rng));
    else
      t.set_dims(rng() % t.dims_size(), SomeInt(rng));
  }
}

void MutateDtype(Rng& rng, onnx::GraphProto& g) {
  int32_t type = static_cast<int32_t>(rng() % 26);
  if (g.initializer_size() > 0 && rng() % 2) {
    g.mutable_initializer(rng() % g.initializer_size())->set_data_type(type);
  } else if (g.input_size() > 0) {
    auto& vi = *g.mutable_input(rng() % g.input_size());
    vi.mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
}

void MutateNodeList(Rng& rng, onnx::GraphProto& g) {
  int n = g.node_size();
  if (n == 0) return;
  switch (rng() % 3) {
    case 0:
      *g.add_node() = g.node(rng() % n);
      break;
    case 1:
      g.mutable_node()->DeleteSubrange(rng() % n, 1);
      break;
    default:
      g.mutable_node()->SwapElements(rng() % n, rng() % n);
  }
}

void MutateOnce(Rng& rng, onnx::ModelProto& model) {
  auto graphs = Graphs(model.mutable_graph());
  onnx::GraphProto& g = *PickFrom(rng, graphs);
  onnx::NodeProto* node = SomeNode(rng, graphs);
  switch (rng() % 10) {
    case 0:
    case 1:
    case 2:
      if (node && node->attribute_size() > 0) {
        MutateAttributeValue(rng, *node->mutable_attribute(rng() % node->attribute_size()));
        break;
      }
      [[fallthrough]];
    case 3:
      if (node) AddAttribute(rng, *node);
      break;
    case 4:
      Rewire(rng, g);
      break;
    case 5:
      if (node) ChangeOpType(rng, *node);
      break;
    case 6:
      MutateDims(rng, g);
      break;
    case 7:
      MutateDtype(rng, g);
      break;
    case 8:
      MutateNodeList(rng, g);
      break;
    default:
      if (model.opset_import_size() > 0) {
        model.mutable_opset_import(rng() % model.opset_import_size())
            ->set_version(static_cast<int64_t>(rng() % 23));
      } else if (node && node->attribute_size() > 0) {
        node->mutable_attribute()->DeleteSubrange(rng() % node->attribute_size(), 1);
      }
  }
}

bool BytesOnly() {
  static const bool bytes_only = [] {
    const char* env = std::getenv("PORTTOOL_FUZZ_BYTES_ONLY");
    return env && std::strcmp(env, "1") == 0;
  }();
  return bytes_only;
}

}  // namespace

std::optional<std::string> MutateModelBytes(std::string_view bytes, uint32_t seed) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
  Rng rng(seed);
  int count = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < count; ++i) MutateOnce(rng, model);
  return model.SerializeAsString();
}

size_t MutateModelInput(uint8_t* data, size_t size, size_t max_size, unsigned seed, size_t prefix,
                        ByteMutator byte_mutate) {
  if (BytesOnly() || seed % 4 == 0 || size < prefix) return byte_mutate(data, size, max_size);
  if (prefix > 0 && seed % 7 == 0) {  // a selector byte of its own now and then
    data[seed % prefix] = static_cast<uint8_t>(seed >> 8);
    return size;
  }
  auto body = std::string_view(reinterpret_cast<const char*>(data) + prefix, size - prefix);
  auto mutated = MutateModelBytes(body, seed);
  if (!mutated || prefix + mutated->size() > max_size) return byte_mutate(data, size, max_size);
  std::memcpy(data + prefix, mutated->data(), mutated->size());
  return prefix + mutated->size();
}

}  // namespace porttool::fuzz
