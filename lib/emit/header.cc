#include "lib/emit/header.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "lib/emit/code_text.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

// Field suffixes of per-tensor macros, used to keep tensor identifiers collision-free.
std::vector<std::string> MacroFields(size_t max_rank) {
  std::vector<std::string> fields = {"NAME",     "INDEX",         "DTYPE",        "ONNX_DTYPE",
                                     "CTYPE",    "RANK",          "DIMS",         "ELEMENTS",
                                     "BYTES",    "ALIGNED_BYTES", "OFFSET",       "FIRST_USE",
                                     "LAST_USE", "PTR",           "ELEMENT_BYTES"};
  for (size_t i = 0; i < max_rank; ++i) fields.push_back(fmt::format("DIM{}", i));
  return fields;
}

std::string Unsigned(uint64_t value) { return fmt::format("{}u", value); }

std::string DimsText(const std::vector<int64_t>& dims) {
  return dims.empty() ? "scalar" : fmt::format("[{}]", fmt::join(dims, ", "));
}

// Accumulates the header text; `Define` keeps every macro on one line.
class HeaderWriter {
 public:
  HeaderWriter(std::string prefix, CNameTable& names) : p_(std::move(prefix)), names_(names) {}

  void Line(const std::string& text = {}) { text_ += text + "\n"; }
  void Define(const std::string& name, const std::string& value) {
    text_ += fmt::format("#define {}_{} {}\n", p_, name, value);
  }
  // Stem of a tensor's macros in `section`: PREFIX_SECTION_CNAME.
  std::string Stem(const std::string& section, const std::string& tensor) {
    return section + "_" + ToUpper(names_.Assign(tensor));
  }
  const std::string& prefix() const { return p_; }
  std::string& text() { return text_; }

 private:
  std::string p_;
  CNameTable& names_;
  std::string text_;
};

void WriteTypeMacros(HeaderWriter& w, const std::string& stem, int32_t dtype,
                     const std::vector<int64_t>& dims) {
  w.Define(stem + "_DTYPE", CStringLiteral(ir::DtypeName(dtype)));
  w.Define(stem + "_ONNX_DTYPE", std::to_string(dtype));
  w.Define(stem + "_CTYPE", ir::DtypeCType(dtype));
  w.Define(stem + "_ELEMENT_BYTES", Unsigned(ir::DtypeSize(dtype)));
  w.Define(stem + "_RANK", std::to_string(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    w.Define(fmt::format("{}_DIM{}", stem, i), std::to_string(dims[i]));
  }
  // An empty initializer list is not C99, so a scalar has no _DIMS.
  if (!dims.empty()) w.Define(stem + "_DIMS", fmt::format("{{{}}}", fmt::join(dims, ", ")));
}

// `base` + offset as a pointer to the tensor's C type, for placing kernels' operands.
void WritePointerMacro(HeaderWriter& w, const std::string& stem, bool is_const) {
  const char* qual = is_const ? "const " : "";
  w.Define(stem + "_PTR(base)",
           fmt::format("(({0}{1}_{2}_CTYPE*)((({0}uint8_t*)(base)) + {1}_{2}_OFFSET))", qual,
                       w.prefix(), stem));
}

void WriteBuffer(HeaderWriter& w, const BufferInfo& b) {
  const char* kind = b.is_input ? "INPUT" : "OUTPUT";
  w.Line(fmt::format("/* {} {} \"{}\": {} {} */", b.is_input ? "Input" : "Output", b.index,
                     CommentText(b.name), ir::DtypeName(b.dtype), DimsText(b.dims)));
  std::string stem = w.Stem(kind, b.name);
  w.Define(stem + "_NAME", CStringLiteral(b.name));
  w.Define(stem + "_INDEX", std::to_string(b.index));
  WriteTypeMacros(w, stem, b.dtype, b.dims);
  w.Define(stem + "_ELEMENTS", Unsigned(b.elements));
  w.Define(stem + "_BYTES", Unsigned(b.bytes));
  w.Define(stem + "_ALIGNED_BYTES", Unsigned(b.aligned_bytes));
  w.Line();
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "n/a" : fmt::format("{:.1f}%", 100.0 * part / whole);
}

void WriteArena(HeaderWriter& w, const analysis::MemoryPlan& plan,
                const analysis::Liveness& liveness) {
  std::unordered_map<std::string, const analysis::TensorLifetime*> types;
  for (const auto& t : liveness.tensors) types[t.name] = &t;
  w.Line(
      fmt::format("/* Arena: one static buffer for {} activation tensors over {} steps; a "
                  "tensor lives from\n * its FIRST_USE step to its LAST_USE step (inclusive).",
                  plan.tensors.size(), liveness.order.size()));
  w.Line(
      fmt::format(" * size {} bytes ({}), naive sum {} bytes ({} of it), lower bound {} bytes "
                  "(arena is {} of it).",
                  plan.arena_bytes, util::FormatBytes(plan.arena_bytes), plan.naive_bytes,
                  Percent(plan.arena_bytes, plan.naive_bytes), plan.lower_bound_bytes,
                  Percent(plan.arena_bytes, plan.lower_bound_bytes)));
  w.Line(
      fmt::format(" * Placement: greedy best fit, {}. Declare it as\n"
                  " *   {}_ALIGNED({}) static uint8_t arena[{}_ARENA_SIZE]; */",
                  plan.strategy, w.prefix(), plan.alignment, w.prefix()));
  w.Define("ARENA_SIZE", Unsigned(plan.arena_bytes));
  w.Define("ARENA_SIZE_NAIVE", Unsigned(plan.naive_bytes));
  w.Define("ARENA_SIZE_LOWER_BOUND", Unsigned(plan.lower_bound_bytes));
  w.Define("ARENA_TENSOR_COUNT", std::to_string(plan.tensors.size()));
  w.Define("ARENA_STEP_COUNT", std::to_string(liveness.order.size()));
  w.Line();
  for (const auto& t : plan.tensors) {
    const analysis::TensorLifetime& type = *types.at(t.name);
    w.Line(fmt::format("/* \"{}\": {} {}, steps {}..{} */", CommentText(t.name),
                       ir::DtypeName(type.dtype), DimsText(type.dims), t.first_use, t.last_use));
    std::string stem = w.Stem("ARENA", t.name);
    w.Define(stem + "_CTYPE", ir::DtypeCType(type.dtype));
    w.Define(stem + "_OFFSET", Unsigned(t.offset));
    w.Define(stem + "_BYTES", Unsigned(t.bytes));
    w.Define(stem + "_FIRST_USE", std::to_string(t.first_use));
    w.Define(stem + "_LAST_USE", std::to_string(t.last_use));
    WritePointerMacro(w, stem, false);
  }
  w.Line();
}

void WriteWeights(HeaderWriter& w, const WeightsLayout& layout, const std::string& array) {
  w.Line(
      fmt::format("/* Weights: {} tensors in one blob of {} bytes ({}), each at a {}-byte "
                  "aligned offset,\n * little-endian. */",
                  layout.entries.size(), layout.total_bytes, util::FormatBytes(layout.total_bytes),
                  layout.alignment));
  w.Define("WEIGHTS_SIZE", Unsigned(layout.total_bytes));
  w.Define("WEIGHTS_TENSOR_COUNT", std::to_string(layout.entries.size()));
  if (!array.empty()) {
    w.Line(fmt::format("extern const uint8_t {}[]; /* defined in the generated weights source */",
                       array));
  }
  for (const auto& e : layout.entries) {
    w.Line(fmt::format("/* \"{}\": {} {} */", CommentText(e.name), ir::DtypeName(e.dtype),
                       DimsText(e.dims)));
    std::string stem = w.Stem("WEIGHT", e.name);
    w.Define(stem + "_CTYPE", ir::DtypeCType(e.dtype));
    w.Define(stem + "_OFFSET", Unsigned(e.offset));
    w.Define(stem + "_BYTES", Unsigned(e.bytes));
    WritePointerMacro(w, stem, true);
  }
  w.Line();
}

void WritePreamble(HeaderWriter& w, const HeaderOptions& o,
                   const std::vector<CNameCollision>& collisions) {
  w.Line(fmt::format("/* Buffers of {} for firmware. Generated by porttool; do not edit.",
                     CommentText(o.model_file)));
  w.Line(" *");
  w.Line(" * model:     " + CommentText(o.model_file));
  w.Line(" * sha256:    " + CommentText(o.model_sha256));
  w.Line(std::string(" * porttool:  ") + PORTTOOL_VERSION);
  w.Line(" * command:   " + CommentText(o.command_line));
  w.Line(
      fmt::format(" * alignment: {} bytes (every *_ALIGNED_BYTES, offset and size)", o.alignment));
  if (!collisions.empty()) {
    w.Line(" *");
    w.Line(" * Renamed so that every tensor has its own C identifier:");
    for (const auto& c : collisions) {
      w.Line(fmt::format(" *   \"{}\" -> {} (the identifier was taken by \"{}\")",
                         CommentText(c.name), c.c_name, CommentText(c.conflict)));
    }
  }
  w.Line(" */");
}

std::string Guard(const std::string& prefix) { return prefix + "_H_"; }

}  // namespace

std::vector<BufferInfo> GraphBuffers(const io::Model& model, uint64_t alignment) {
  ir::GraphView view(model.proto.graph());
  std::vector<BufferInfo> out;
  auto add = [&](const onnx::ValueInfoProto& info, bool is_input, int index) {
    analysis::StaticTensor t = analysis::ResolveStaticTensor(
        info.name(), &info, is_input ? "graph input" : "graph output");
    BufferInfo b;
    b.name = t.name;
    b.is_input = is_input;
    b.index = index;
    b.dtype = t.dtype;
    b.dims = t.dims;
    b.elements = static_cast<uint64_t>(ir::ElementCount(t.dims));
    b.bytes = t.bytes;
    b.aligned_bytes = analysis::AlignUp(t.bytes, alignment);
    out.push_back(std::move(b));
  };
  int index = 0;
  for (const auto* input : view.RealInputs()) add(*input, true, index++);
  index = 0;
  for (const auto& output : model.proto.graph().output()) add(output, false, index++);
  return out;
}

std::string DefaultPrefix(const std::filesystem::path& model_path) {
  std::string stem = SanitizeCIdentifier(model_path.stem().string());
  return ToUpper(stem);
}

Header RenderHeader(const io::Model& model, const HeaderOptions& options) {
  if (!IsCIdentifier(options.prefix)) {
    ThrowUsage(
        "symbol prefix '{}' is not a C identifier (letters, digits and '_', not starting with "
        "a digit)",
        options.prefix);
  }
  Header header;
  header.buffers = GraphBuffers(model, options.alignment);
  size_t max_rank = 0;
  for (const auto& b : header.buffers) max_rank = std::max(max_rank, b.dims.size());
  CNameTable names(MacroFields(max_rank));
  HeaderWriter body(ToUpper(options.prefix), names);
  const std::string& p = body.prefix();

  body.Define("ALIGNMENT", Unsigned(options.alignment));
  body.Define("ALIGN_UP(n)", fmt::format("((((n) + {0}u) / {1}u) * {1}u)", options.alignment - 1,
                                         options.alignment));
  body.Line("#if defined(__GNUC__) || defined(__clang__)");
  body.Line(fmt::format("#define {}_ALIGNED(n) __attribute__((aligned(n)))", p));
  body.Line("#elif defined(_MSC_VER)");
  body.Line(fmt::format("#define {}_ALIGNED(n) __declspec(align(n))", p));
  body.Line("#else");
  body.Line(fmt::format("#define {}_ALIGNED(n) /* no alignment attribute known */", p));
  body.Line("#endif");
  body.Line();
  int inputs = static_cast<int>(std::count_if(header.buffers.begin(), header.buffers.end(),
                                              [](const auto& b) { return b.is_input; }));
  body.Define("NUM_INPUTS", std::to_string(inputs));
  body.Define("NUM_OUTPUTS", std::to_string(header.buffers.size() - inputs));
  body.Line();
  for (auto& b : header.buffers) {
    WriteBuffer(body, b);
    b.c_name = names.Assign(b.name);
  }
  if (options.arena != nullptr && options.liveness != nullptr) {
    WriteArena(body, *options.arena, *options.liveness);
  }
  if (options.weights != nullptr) WriteWeights(body, *options.weights, options.weights_array);

  HeaderWriter top(p, names);
  WritePreamble(top, options, names.collisions());
  top.Line(fmt::format("#ifndef {}", Guard(p)));
  top.Line(fmt::format("#define {}", Guard(p)));
  top.Line();
  top.Line("#include <stdint.h>");
  top.Line();
  top.Line("#ifdef __cplusplus");
  top.Line("extern \"C\" {");
  top.Line("#endif");
  top.Line();
  header.text = top.text() + body.text();
  header.text += "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n";
  header.text += fmt::format("#endif  /* {} */\n", Guard(p));
  header.collisions = names.collisions();
  for (const auto& b : header.buffers) header.c_names[b.name] = b.c_name;
  if (options.arena) {
    for (const auto& t : options.arena->tensors) header.c_names[t.name] = names.Assign(t.name);
  }
  if (options.weights) {
    for (const auto& e : options.weights->entries) header.c_names[e.name] = names.Assign(e.name);
  }
  return header;
}

}  // namespace porttool::emit
