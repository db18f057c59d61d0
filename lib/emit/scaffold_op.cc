// scaffold-op: describes a node as op.json (CustomOpSpec) and writes its package. The files are
// templates under lib/emit/templates/op/ (embedded_files.h), filled by FillTemplate; the code here
// computes the values that vary with the op (parameters, formulas, schema inputs and outputs).
#include "lib/emit/scaffold_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/emit/embedded_files.h"
#include "lib/emit/kit.h"
#include "lib/io/atomic_file.h"
#include "lib/io/output_dir.h"
#include "lib/io/staging_dir.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/shapes_by_execution.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/sha256.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

using util::ClosestNames;
using util::Join;
using util::Sha256File;
using util::StartsWith;

namespace fs = std::filesystem;
using shape::CustomOpSpec;

// A kernel porttool can write. `formula` is one expression in `x` and `p->attr`, written with
// @-functions that expand to the scalar (pt_s_*), the SIMD (pt_v_*: SSE2 or NEON) or the numpy
// (_*, RKNN toolkit class) helpers, so all paths compute the same formula. Constants go through
// @c().
struct KnownKernel {
  const char* op;
  const char* formula;
  std::vector<std::pair<const char*, float>> float_attrs;  // name, ONNX default
  bool bias = false;                                       // optional input 1 added along last axis
};

const std::vector<KnownKernel>& KnownKernels() {
  static const std::vector<KnownKernel> kernels = {
      {"Gelu",
       "@mul(@mul(@c(0.5f), x), @add(@c(1.0f), @erf(@mul(x, @c(0.70710678118654752f)))))",
       {}},
      {"FastGelu",
       "@mul(@mul(@c(0.5f), x), @add(@c(1.0f), @tanh(@mul(@c(0.7978845608028654f), @add(x, "
       "@mul(@c(0.044715f), @mul(x, @mul(x, x))))))))",
       {},
       true},
      {"QuickGelu", "@div(x, @add(@c(1.0f), @exp(@mul(@c(-p->alpha), x))))", {{"alpha", 1.702f}}},
      {"HardSwish",
       "@mul(x, @max(@c(0.0f), @min(@c(1.0f), @add(@mul(x, @c(1.0f / 6.0f)), @c(0.5f)))))",
       {}},
      {"HardSigmoid",
       "@max(@c(0.0f), @min(@c(1.0f), @add(@mul(@c(p->alpha), x), @c(p->beta))))",
       {{"alpha", 0.2f}, {"beta", 0.5f}}},
      {"Relu", "@max(x, @c(0.0f))", {}},
      {"LeakyRelu",
       "@add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @min(x, @c(0.0f))))",
       {{"alpha", 0.01f}}},
      {"Elu",
       "@add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @sub(@exp(@min(x, @c(0.0f))), @c(1.0f))))",
       {{"alpha", 1.0f}}},
      {"Selu",
       "@mul(@c(p->gamma), @add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @sub(@exp(@min(x, "
       "@c(0.0f))), @c(1.0f)))))",
       {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}},
      {"Sigmoid", "@div(@c(1.0f), @add(@c(1.0f), @exp(@neg(x))))", {}},
      {"Tanh", "@tanh(x)", {}},
      {"Softsign", "@div(x, @add(@c(1.0f), @abs(x)))", {}},
      {"Exp", "@exp(x)", {}},
      {"Erf", "@erf(x)", {}},
      {"Abs", "@abs(x)", {}},
      {"Neg", "@neg(x)", {}},
      {"ThresholdedRelu", "@gtsel(x, @c(p->alpha))", {{"alpha", 1.0f}}},
  };
  return kernels;
}

const KnownKernel* FindKnown(const std::string& op_type) {
  for (const auto& k : KnownKernels()) {
    if (ToLower(k.op) == ToLower(op_type)) return &k;
  }
  return nullptr;
}

std::string Expand(std::string formula, const std::string& prefix) {
  for (size_t pos; (pos = formula.find('@')) != std::string::npos;) {
    formula.replace(pos, 1, prefix);
  }
  return formula;
}

int32_t TypeOf(const ir::GraphView& view, const std::string& name) {
  for (const auto* list :
       {&view.graph().input(), &view.graph().value_info(), &view.graph().output()}) {
    for (const auto& vi : *list) {
      if (vi.name() == name) return vi.type().tensor_type().elem_type();
    }
  }
  if (const auto* init = view.Initializer(name)) return init->data_type();
  return 0;
}

shape::CustomOpTensor DescribeTensor(const ir::GraphView& view, const std::string& name,
                                     const std::string& role) {
  shape::CustomOpTensor t;
  t.name = role;
  t.dtype = TypeOf(view, name);
  if (t.dtype == 0) t.dtype = onnx::TensorProto::FLOAT;
  for (const auto* list :
       {&view.graph().input(), &view.graph().value_info(), &view.graph().output()}) {
    for (const auto& vi : *list) {
      if (vi.name() != name) continue;
      if (auto dims = ir::StaticShape(vi.type())) t.shape = *dims;
      if (vi.type().tensor_type().has_shape()) t.rank = vi.type().tensor_type().shape().dim_size();
    }
  }
  if (const auto* init = view.Initializer(name)) {
    t.shape.assign(init->dims().begin(), init->dims().end());
    t.rank = init->dims_size();
  }
  return t;
}

nlohmann::json AttributeValue(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::INT:
      return a.i();
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    default:
      ThrowBadInput("attribute '{}' has type {}, which scaffold-op cannot pass to a C kernel",
                    a.name(), static_cast<int>(a.type()));
  }
}

const onnx::NodeProto& FindNode(const io::Model& model, const std::string& ref, int& index) {
  index = ir::ResolveNodeRef(ir::GraphView(model.proto.graph()), ref, "node to scaffold");
  return model.proto.graph().node(index);
}

// A custom operator is a C kernel over tensors and plain attributes: a subgraph (If/Loop/Scan
// bodies) would have to run inside it, which no target SDK's custom-op interface offers. The node
// is refused before any analysis, whatever the options: bad input (exit 3), like the other
// attribute types a C kernel cannot take.
void RefuseGraphAttributes(const onnx::NodeProto& node, int index) {
  for (const auto& a : node.attribute()) {
    if (a.type() != onnx::AttributeProto::GRAPH && a.type() != onnx::AttributeProto::GRAPHS &&
        !a.has_g() && a.graphs_size() == 0) {
      continue;
    }
    throw Error(ErrorKind::kBadInput,
                fmt::format("node '{}' ({}) carries a subgraph (attribute '{}'): a custom "
                            "operator cannot hold one, its kernel would have to run the body; "
                            "remove the {} first (simplify inlines an If whose condition is "
                            "constant: give the input values it depends on), or run it on a "
                            "host that runs ONNX",
                            ir::NodeLabel(node, index), node.op_type(), a.name(), node.op_type()),
                node.name());
  }
}

using Vars = std::vector<std::pair<std::string, std::string>>;

std::string CFloat(double v) { return fmt::format("{:a}f", static_cast<float>(v)); }

// The params field of attribute `name`. Distinct names can sanitise to one field ("a.b", "a_b")
// or to another's count field ("a_count" beside an ints "a"), which would not compile: later
// ones get _2, _3, ...
std::string FieldName(const std::string& name, std::set<std::string>& taken) {
  std::string base = SanitizeCIdentifier(name), f = base;
  for (int n = 2; taken.count(f) || taken.count(f + "_count"); ++n) {
    f = base + "_" + std::to_string(n);
  }
  taken.insert(f);
  taken.insert(f + "_count");
  return f;
}

// The params struct, its defaults (the source node's values) and the attribute setters.
void ParamCode(const CustomOpSpec& spec, Vars& vars) {
  std::string fields, defaults, setters;
  std::set<std::string> taken;
  for (const auto& a : spec.attributes) {
    std::string f = FieldName(a.name, taken);
    std::string check = fmt::format(
        "  if (strcmp(attr->name, {}) == 0) {{\n    if (attr->type != PT_ATTR_{}) return "
        "PT_BAD_ARGUMENT;\n",
        CStringLiteral(a.name), ToUpper(shape::AttributeTypeName(a.type)));
    const auto& d = a.default_value;
    switch (a.type) {
      case onnx::AttributeProto::FLOAT:
        fields += fmt::format("  float {};\n", f);
        if (d.is_number()) defaults += fmt::format("  p.{} = {};\n", f, CFloat(d.get<double>()));
        setters += check + fmt::format("    params->{} = attr->f;\n", f);
        break;
      case onnx::AttributeProto::INT:
        fields += fmt::format("  int64_t {};\n", f);
        if (d.is_number()) defaults += fmt::format("  p.{} = {}LL;\n", f, d.get<int64_t>());
        setters += check + fmt::format("    params->{} = attr->i;\n", f);
        break;
      case onnx::AttributeProto::STRING:
        fields += fmt::format("  const char* {};\n", f);
        if (d.is_string())
          defaults += fmt::format("  p.{} = {};\n", f, CStringLiteral(d.get<std::string>()));
        setters += check + fmt::format("    params->{} = attr->s;\n", f);
        break;
      default: {
        bool ints = a.type == onnx::AttributeProto::INTS;
        fields +=
            fmt::format("  const {}* {};\n  int64_t {}_count;\n", ints ? "int64_t" : "float", f, f);
        std::vector<std::string> items;
        for (const auto& v : d) {
          items.push_back(ints ? fmt::format("{}LL", v.get<int64_t>()) : CFloat(v.get<double>()));
        }
        if (!items.empty()) {
          defaults += fmt::format(
              "  {{\n    static const {} d[{}] = {{{}}};\n    p.{} = d;\n    "
              "p.{}_count = {};\n  }}\n",
              ints ? "int64_t" : "float", items.size(), Join(items, ", "), f, f, items.size());
        }
        setters += check + fmt::format(
                               "    params->{} = attr->{};\n    params->{}_count = "
                               "attr->count;\n",
                               f, ints ? "ints" : "floats", f);
      }
    }
    setters += "    return PT_OK;\n  }\n";
  }
  if (fields.empty()) fields = "  int32_t unused; /* the op has no attributes */\n";
  vars.push_back({"param_fields", fields});
  vars.push_back({"param_defaults", defaults});
  vars.push_back({"param_setters", setters});
}

std::string KernelSource(const CustomOpSpec& spec, const Vars& vars) {
  std::string body;
  if (const KnownKernel* known = FindKnown(spec.op_type)) {
    Vars v = vars;
    v.push_back({"scalar_formula", Expand(known->formula, "pt_s_")});
    v.push_back({"vector_formula", Expand(known->formula, "pt_v_")});
    // FastGelu's optional bias: y = x + bias (bias along the last axis) first, then the
    // activation runs in place on y.
    v.push_back(
        {"bias_block", known->bias ? FillTemplate(Template("op/kernel_bias.c"), vars) : ""});
    body = FillTemplate(Template("op/kernel_elementwise.c"), v);
  } else {
    std::string doc;
    for (const auto& t : spec.inputs) {
      doc += fmt::format("\n *   {} {} rank {}{}", CommentText(t.name), ir::DtypeName(t.dtype),
                         t.rank, t.optional ? " (optional)" : "");
    }
    Vars v = vars;
    v.push_back({"io_doc", doc});
    body = FillTemplate(Template("op/kernel_skeleton.c"), v);
  }
  // The common part (params, attributes, status strings) and the body, a blank line apart.
  return FillTemplate(Template("op/kernel_common.c"), vars) + "\n" + body;
}

std::string SchemaSource(const CustomOpSpec& spec, Vars vars) {
  std::string io, infer;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    io += fmt::format(
        "  schema.Input({}, {}, \"\", \"T{}\", onnx::OpSchema::{});\n"
        "  schema.TypeConstraint(\"T{}\", {{\"tensor({})\"}}, \"\");\n",
        i, CStringLiteral(spec.inputs[i].name), i, spec.inputs[i].optional ? "Optional" : "Single",
        i,
        ir::DtypeName(spec.inputs[i].dtype) == "float32" ? "float"
                                                         : ir::DtypeName(spec.inputs[i].dtype));
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const auto& o = spec.outputs[i];
    io += fmt::format(
        "  schema.Output({}, {}, \"\", \"O{}\");\n"
        "  schema.TypeConstraint(\"O{}\", {{\"tensor({})\"}}, \"\");\n",
        i, CStringLiteral(o.name), i, i,
        ir::DtypeName(o.dtype) == "float32" ? "float" : ir::DtypeName(o.dtype));
    if (spec.shape_rule == "same_as_input") {
      infer += fmt::format(
          "    onnx::propagateElemTypeFromInputToOutput(ctx, {0}, {1});\n"
          "    if (onnx::hasInputShape(ctx, {0})) onnx::propagateShapeFromInputToOutput(ctx, {0}, "
          "{1});\n",
          spec.shape_input, i);
      continue;
    }
    infer += fmt::format("    onnx::updateOutputElemType(ctx, {}, {});\n", i, o.dtype);
    infer += fmt::format(
        "    {{\n      auto* s = onnx::getOutputShape(ctx, {});\n      s->clear_dim();\n", i);
    for (int64_t d : o.shape) infer += fmt::format("      s->add_dim()->set_dim_value({});\n", d);
    infer += "    }\n";
  }
  for (const auto& a : spec.attributes) {
    io += fmt::format("  schema.Attr({}, \"\", onnx::AttributeProto::{}, false);\n",
                      CStringLiteral(a.name), ToUpper(shape::AttributeTypeName(a.type)));
  }
  if (infer.empty()) infer = "    (void)ctx;\n";
  vars.push_back({"schema_io", io});
  vars.push_back({"schema_infer", infer});
  return FillTemplate(Template("op/schema.cc"), vars);
}

std::string SchemaTestSource(const CustomOpSpec& spec, Vars vars) {
  // An optional input of unknown shape is left out; before a later input it stays as an empty
  // name, so that the inputs after it keep their positions (Resize's roi before its scales).
  auto left_out = [](const shape::CustomOpTensor& t) { return t.optional && t.shape.empty(); };
  size_t used = spec.inputs.size();
  while (used > 0 && left_out(spec.inputs[used - 1])) --used;
  std::string inputs;
  for (size_t i = 0; i < used; ++i) {
    const auto& t = spec.inputs[i];
    if (left_out(t)) {
      inputs += "  node->add_input(\"\");\n";
      continue;
    }
    inputs += fmt::format(
        "  node->add_input(\"x{0}\");\n  {{\n    auto* tt = g->add_input();\n    "
        "tt->set_name(\"x{0}\");\n"
        "    auto* type = tt->mutable_type()->mutable_tensor_type();\n    "
        "type->set_elem_type({1});\n",
        i, t.dtype);
    // The `shape` variable only with a dim to add: for an input whose dims op.json does not
    // know it was left unused, failing -Werror builds of the package.
    if (t.shape.empty()) {
      inputs += "    type->mutable_shape();\n";
    } else {
      inputs += "    auto* shape = type->mutable_shape();\n";
      for (int64_t d : t.shape)
        inputs += fmt::format("    shape->add_dim()->set_dim_value({});\n", d);
    }
    inputs += "  }\n";
  }
  std::vector<std::string> dims;
  for (int64_t d : spec.outputs[0].shape) dims.push_back(std::to_string(d));
  vars.push_back({"test_inputs", inputs});
  vars.push_back({"want_dims", Join(dims, ", ")});
  return FillTemplate(Template("op/schema_test.cc"), vars);
}

std::string TestSource(const CustomOpSpec& spec, const std::string& kit_prefix, int num_inputs,
                       Vars vars) {
  if (!FindKnown(spec.op_type) || kit_prefix.empty()) {
    return FillTemplate(Template("op/skeleton_test.c"), vars);
  }
  std::string setup;
  std::string kit_upper = ToUpper(kit_prefix);
  for (int i = 0; i < num_inputs; ++i) {
    setup += fmt::format(
        "  inputs[{0}].dtype = 1;\n  inputs[{0}].rank = {1}_INPUT_{0}_RANK;\n"
        "  inputs[{0}].dims = {2}_input_{0}_dims;\n  inputs[{0}].data = (void*){2}_input_{0};\n",
        i, kit_upper, kit_prefix);
  }
  vars.push_back({"KIT", kit_upper});
  vars.push_back({"kit", kit_prefix});
  vars.push_back({"input_setup", setup});
  return FillTemplate(Template("op/kit_test.c"), vars);
}

Vars SpecVars(const CustomOpSpec& spec) {
  size_t required = 0;
  for (const auto& t : spec.inputs) required += t.optional ? 0 : 1;
  std::string sym_camel = spec.symbol;
  sym_camel[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sym_camel[0])));
  return {{"sym", spec.symbol},
          {"SYM", ToUpper(spec.symbol)},
          {"Sym", sym_camel},
          {"Op", spec.op_type},
          {"domain", spec.domain},
          {"version", std::to_string(spec.since_version)},
          {"node", spec.source_node},
          {"model", spec.source_model},
          {"sha256", spec.source_sha256},
          {"min_inputs", std::to_string(required)},
          {"max_inputs", std::to_string(spec.inputs.size())},
          {"num_outputs", std::to_string(spec.outputs.size())},
          {"kernel_state", FindKnown(spec.op_type) ? "a working implementation"
                                                   : "a skeleton returning PT_NOT_IMPLEMENTED"}};
}

// The op's kit goes to test/kit/; the executor must be able to run the node (a skeleton op has
// no reference numerics, so no kit).
std::string WriteKit(const io::Model& model, const ScaffoldOptions& options,
                     const fs::path& out_dir, ScaffoldResult& result, int& num_inputs) {
  fs::path staging = out_dir / "test" / ".kit-staging";
  fs::remove_all(staging);
  KitOptions kit_options;
  kit_options.select = KitOptions::Select::kNode;
  kit_options.name = options.node;
  kit_options.seed = options.seed;
  std::vector<KitSummary> kits;
  try {
    kits = MakeKits(model, kit_options, staging);
  } catch (const io::OutputError&) {
    throw;  // the disk failed, not the kit: the package cannot be written either
  } catch (const Error& e) {
    fs::remove_all(staging);
    result.notes.push_back(std::string("no test kit: ") + e.what());
    return "";
  }
  fs::remove_all(out_dir / "test" / "kit");
  fs::rename(staging / kits.at(0).dir, out_dir / "test" / "kit");
  fs::remove_all(staging);
  num_inputs = 0;
  for (const auto& e : fs::directory_iterator(out_dir / "test" / "kit" / "test_data_set_0")) {
    if (StartsWith(e.path().filename().string(), "input_")) ++num_inputs;
  }
  return SanitizeCIdentifier(ToLower(kits[0].dir));
}

// The package replaces only what scaffold-op wrote before (or an empty directory): it is built
// beside `dir` and swapped in whole, so anything else in there would be lost.
// The output directory rule, before any work: the model and its data files stay out of it.
void CheckPackageDir(const io::Model& model, const ScaffoldOptions& options, const fs::path& dir) {
  io::OutputDirRequest request{dir, options.other_inputs, {}, options.replace};
  if (!model.path.empty()) {
    for (const auto& f : io::ReferencedFiles(model)) request.inputs.push_back(f);
  }
  io::CheckOutputDir(request);
}

}  // namespace

ScaffoldVars TemplateVarsFor(const CustomOpSpec& spec) {
  Vars vars = SpecVars(spec);
  ParamCode(spec, vars);
  return vars;
}

bool HasKnownKernel(const std::string& op_type) { return FindKnown(op_type) != nullptr; }

CustomOpSpec DescribeNode(const io::Model& source, const std::string& node_name) {
  int index = -1;
  const onnx::NodeProto& original = FindNode(source, node_name, index);
  RefuseGraphAttributes(original, index);
  io::Model model = source;
  shape::InferShapes(model);
  try {
    runtime::CompleteShapesByExecution(model);
  } catch (const Error&) {
    // Shapes stay as inference left them; the op.json then records ranks without dims.
  }
  ir::GraphView view(model.proto.graph());
  CustomOpSpec spec;
  spec.domain = original.domain().empty() ? "ai.onnx" : original.domain();
  spec.op_type = original.op_type();
  for (const auto& op : model.proto.opset_import()) {
    std::string d = op.domain().empty() ? "ai.onnx" : op.domain();
    if (d == spec.domain) spec.since_version = static_cast<int>(op.version());
  }
  spec.symbol = SanitizeCIdentifier(ToLower(spec.op_type));
  const KnownKernel* known = FindKnown(spec.op_type);
  spec.kernel = known ? spec.symbol : "skeleton";
  for (int i = 0; i < original.input_size(); ++i) {
    auto t = DescribeTensor(view, original.input(i), i == 0 ? "X" : fmt::format("input_{}", i));
    t.optional = original.input(i).empty() || (known && known->bias && i == 1);
    spec.inputs.push_back(std::move(t));
  }
  if (known && known->bias && spec.inputs.size() == 1) {
    spec.inputs.push_back({"bias", onnx::TensorProto::FLOAT, 1, {}, true});
  }
  for (int i = 0; i < original.output_size(); ++i) {
    spec.outputs.push_back(
        DescribeTensor(view, original.output(i), i == 0 ? "Y" : fmt::format("output_{}", i)));
  }
  for (const auto& a : original.attribute()) {
    spec.attributes.push_back({a.name(), a.type(), AttributeValue(a)});
  }
  if (known) {
    for (const auto& [name, value] : known->float_attrs) {
      bool present = std::any_of(spec.attributes.begin(), spec.attributes.end(),
                                 [&name = name](const auto& a) { return a.name == name; });
      if (!present) spec.attributes.push_back({name, onnx::AttributeProto::FLOAT, value});
    }
  }
  std::sort(spec.attributes.begin(), spec.attributes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  const auto& in0 = spec.inputs.front();
  bool elementwise = known || (spec.outputs.size() == 1 && spec.outputs[0].shape == in0.shape &&
                               spec.outputs[0].dtype == in0.dtype && !in0.shape.empty());
  // An output whose shape neither inference nor an executor run could see (an op unknown to
  // both) gets input 0's shape: a stated assumption in op.json, to edit, never a silent rank 0.
  bool unknown = std::any_of(spec.outputs.begin(), spec.outputs.end(),
                             [](const auto& t) { return t.rank < 0; });
  spec.shape_rule = elementwise || unknown ? "same_as_input" : "static";
  spec.source_model = source.path.filename().string();
  spec.source_sha256 = source.path.empty() ? "" : Sha256File(source.path);
  spec.source_node = ir::NodeLabel(original, index);
  return spec;
}

ScaffoldResult ScaffoldOp(const io::Model& model, const ScaffoldOptions& options,
                          const fs::path& out_dir) {
  CheckPackageDir(model, options, out_dir);
  ScaffoldResult result;
  result.spec = DescribeNode(model, options.node);
  for (const auto& out : result.spec.outputs) {
    if (out.rank < 0) {
      result.notes.push_back(fmt::format(
          "the shape of output {} is unknown: op.json assumes it has the shape and type of input "
          "0 (edit shape_rule if not)",
          out.name));
    }
  }
  const CustomOpSpec& spec = result.spec;
  Vars vars = TemplateVarsFor(spec);
  // The package is built in a staging directory beside `out_dir` and renamed into place once: a
  // failure anywhere leaves no package, or the previous one as it was.
  io::StagingDir staging(out_dir, "custom-op");
  const fs::path& dir = staging.path();
  fs::create_directories(dir / "test");
  int num_inputs = 0;
  std::string kit_prefix =
      FindKnown(spec.op_type) ? WriteKit(model, options, dir, result, num_inputs) : std::string();
  const KnownKernel* known = FindKnown(spec.op_type);
  std::map<std::string, std::string> adapter_files;
  std::string adapter_cmake, adapters_doc;
  static const std::map<std::string, std::string> kAdapterDoc = {
      {"ort",
       "- `ort/`: ONNX Runtime custom-op library (`RegisterCustomOps`, C API), "
       "`-DONNXRUNTIME_ROOT=`; without it, compile-checked against `ort/stub/`."},
      {"rknn",
       "- `rknn/`: RKNN runtime custom op (`rknn_custom_op` compute callback), rknn_server "
       "plugin, RKNN-Toolkit2 Python class; `-DRKNN_SDK_ROOT=`."},
      {"tensorrt", "- `tensorrt/`: TensorRT IPluginV3 plugin and creator; `-DTENSORRT_ROOT=`."},
      {"tflm", "- `tflm/`: TFLite Micro registration (init/prepare/invoke); `-DTFLM_ROOT=`."},
  };
  for (const auto& target : options.targets) {
    AdapterFiles a =
        GenerateAdapter(target, spec, vars, known ? known->formula : "", known && known->bias);
    adapter_files.insert(a.files.begin(), a.files.end());
    adapter_cmake += "\n" + a.cmake;  // each adapter's block after a blank line
    adapters_doc +=
        kAdapterDoc.at(target) + " Load step and model patch: `" + target + "/README.md`.\n";
  }
  vars.push_back({"adapters_doc", adapters_doc});
  std::map<std::string, std::string> files = {
      {"op.json", util::DumpJson(OpSpecToJson(spec), 2) + "\n"},
      {"README.md", FillTemplate(Template("op/README.md"), vars) +
                        (options.targets.empty()
                             ? ""
                             : "\n" + FillTemplate(Template("op/README_adapters.md"), vars))},
      {"CMakeLists.txt", FillTemplate(Template("op/package.cmake"), vars) + adapter_cmake},
      {"kernel/porttool_custom_op.h", std::string(RuntimeFile("custom_op_abi.h"))},
      {"kernel/" + spec.symbol + ".h", FillTemplate(Template("op/kernel.h"), vars)},
      {"kernel/" + spec.symbol + ".c", KernelSource(spec, vars)},
      {"kernel/" + spec.symbol + "_porttool.c", FillTemplate(Template("op/porttool_glue.c"), vars)},
      {"schema/" + spec.symbol + "_schema.cc", SchemaSource(spec, vars)},
      {"schema/" + spec.symbol + "_schema_test.cc", SchemaTestSource(spec, vars)},
      {"test/" + spec.symbol + "_test.c", TestSource(spec, kit_prefix, num_inputs, vars)},
  };
  files.insert(adapter_files.begin(), adapter_files.end());
  for (const auto& [name, text] : files) {
    fs::create_directories((dir / name).parent_path());
    io::WriteFileAtomic(dir / name, text);
    result.files.push_back(name);
  }
  if (!kit_prefix.empty()) result.files.push_back("test/kit/");
  staging.Commit();
  return result;
}

}  // namespace porttool::emit
