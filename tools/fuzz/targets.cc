// The fuzz targets' bodies, one function per target, shared by the libFuzzer entry points
// (fuzz_<name>.cc) and by the regression replay test that runs in the normal build.
#include "tools/fuzz/targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/analysis/check.h"
#include "lib/analysis/macs.h"
#include "lib/analysis/model_facts.h"
#include "lib/decide/analyzed_model.h"
#include "lib/decide/facts.h"
#include "lib/decide/json_file.h"
#include "lib/decide/remedies.h"
#include "lib/decide/rules.h"
#include "lib/decide/rules_dir.h"
#include "lib/decide/scan.h"
#include "lib/decide/target.h"
#include "lib/emit/code_text.h"
#include "lib/emit/emit_header.h"
#include "lib/emit/split_writer.h"
#include "lib/ir/dtype.h"
#include "lib/ir/split.h"
#include "lib/runtime/resource_limits.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/infer.h"
#include "lib/stages/target.h"
#include "passes/pipeline.h"
#include "porttool_build_config.h"

namespace porttool::fuzz {

namespace executor {

// Turns fuzz bytes into choices, front to back; zeros once the bytes run out. (libFuzzer's
// FuzzedDataProvider is not available to the g++ build that replays the regressions.)
class FuzzedDataProvider {
 public:
  FuzzedDataProvider(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T ConsumeIntegral() {
    T v{};
    size_t n = std::min(sizeof(T), size_);
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
    return v;
  }
  template <typename T>
  T ConsumeIntegralInRange(T lo, T hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const uint64_t raw = span < 256 ? ConsumeIntegral<uint8_t>() : ConsumeIntegral<uint64_t>();
    return static_cast<T>(static_cast<uint64_t>(lo) +
                          (span == UINT64_MAX ? raw : raw % (span + 1)));
  }
  bool ConsumeBool() { return ConsumeIntegral<uint8_t>() & 1; }
  template <typename T>
  T ConsumeFloatingPoint() {
    return ConsumeIntegral<T>();  // any bit pattern, NaN and infinities included
  }
  std::string ConsumeBytesAsString(size_t n) {
    n = std::min(n, size_);
    std::string s(reinterpret_cast<const char*>(data_), n);
    data_ += n;
    size_ -= n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

using porttool::runtime::Tensor;
using TP = onnx::TensorProto;

const char* const kIntAttrs[] = {"axis",
                                 "blocksize",
                                 "group",
                                 "keepdims",
                                 "transA",
                                 "transB",
                                 "to",
                                 "ceil_mode",
                                 "exclusive",
                                 "reverse",
                                 "largest",
                                 "sorted",
                                 "k",
                                 "batch_dims",
                                 "upper",
                                 "select_last_index",
                                 "noop_with_empty_axes",
                                 "count_include_pad",
                                 "storage_order",
                                 "detect_negative"};
const char* const kIntsAttrs[] = {"axes",           "perm",      "kernel_shape", "strides",
                                  "pads",           "dilations", "shape",        "output_shape",
                                  "output_padding", "starts",    "ends",         "split"};
const char* const kFloatAttrs[] = {
    "alpha",        "beta", "epsilon", "gamma", "min",
    "max",          "bias", "lambd",   "ratio", "extrapolation_value",
    "cubic_coeff_a"};
const char* const kStringAttrs[] = {"mode",         "auto_pad",  "coordinate_transformation_mode",
                                    "nearest_mode", "direction", "reduction"};
const char* const kStrings[] = {"nearest",       "linear",
                                "cubic",         "DCR",
                                "CRD",           "constant",
                                "reflect",       "edge",
                                "SAME_UPPER",    "VALID",
                                "asymmetric",    "half_pixel",
                                "align_corners", "tf_crop_and_resize",
                                "floor"};
const int32_t kTypes[] = {TP::FLOAT, TP::INT64,  TP::INT32, TP::BOOL,
                          TP::UINT8, TP::DOUBLE, TP::INT8,  TP::FLOAT16};

template <typename T, size_t N>
const T& Pick(FuzzedDataProvider& fdp, const T (&options)[N]) {
  return options[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

void AddInput(FuzzedDataProvider& fdp, onnx::GraphProto& graph, const std::string& name) {
  TP* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(Pick(fdp, kTypes));
  int rank = fdp.ConsumeIntegralInRange(0, 4);
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
    t->add_dims(d);
    count *= d;
  }
  size_t bytes = static_cast<size_t>(count) * porttool::ir::DtypeSize(t->data_type());
  std::string raw = fdp.ConsumeBytesAsString(bytes);
  raw.resize(bytes, '\0');
  t->set_raw_data(raw);
}

void AddAttribute(FuzzedDataProvider& fdp, onnx::NodeProto& node) {
  auto* a = node.add_attribute();
  switch (fdp.ConsumeIntegralInRange(0, 3)) {
    case 0:
      a->set_name(Pick(fdp, kIntAttrs));
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(fdp.ConsumeIntegral<int64_t>() % (fdp.ConsumeBool() ? 8 : INT64_MAX));
      break;
    case 1: {
      a->set_name(Pick(fdp, kIntsAttrs));
      a->set_type(onnx::AttributeProto::INTS);
      int n = fdp.ConsumeIntegralInRange(0, 8);
      for (int i = 0; i < n; ++i) a->add_ints(fdp.ConsumeIntegralInRange<int64_t>(-5, 9));
      break;
    }
    case 2:
      a->set_name(Pick(fdp, kFloatAttrs));
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(fdp.ConsumeFloatingPoint<float>());
      break;
    default:
      a->set_name(Pick(fdp, kStringAttrs));
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(Pick(fdp, kStrings));
  }
}

}  // namespace executor

// Bytes -> `porttool check`: ONNX checker, strict shape inference and the porting lints.
std::optional<std::string> FuzzCheck(const uint8_t* data, size_t size) {
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    analysis::CheckModel(model);
  });
}

namespace code_text {

bool PrintableAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
}

// A raw `quote` in an escaped literal body (one not preceded by an escaping backslash), or a
// backslash at its end, which would escape the closing quote.
bool RawQuote(std::string_view body, char quote) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\\') {
      if (++i == body.size()) return true;
    } else if (body[i] == quote) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> Finding(const char* what, std::string_view text) {
  std::string hex;
  for (char c : text) hex += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return fmt::format("{}: {}", what, hex);
}

}  // namespace code_text

// Bytes -> each escaper of code_text.h (names in generated code): the invariants that keep a
// name from becoming code. C comment text: printable ASCII, no "*/", "/*" or "??", no trailing
// backslash. C and Python literal bodies: printable ASCII, no raw quote, and for C no "??".
// CMake quoted: no control byte, no unescaped '"' or '$' inside. Shell word: printable ASCII.
std::optional<std::string> FuzzCodeText(const uint8_t* data, size_t size) {
  using code_text::Finding;
  std::string_view text = AsView(data, size);
  std::string comment = emit::CommentText(text);
  if (!code_text::PrintableAscii(comment)) return Finding("comment not printable", comment);
  for (const char* bad : {"*/", "/*", "??"}) {
    if (comment.find(bad) != std::string::npos)
      return Finding("comment holds a terminator", comment);
  }
  if (!comment.empty() &&
      (comment.back() == '\\' || comment.back() == '*' || comment.back() == '/')) {
    return Finding("comment ends in a character that pairs with the next", comment);
  }
  std::string c = emit::CStringBody(text);
  if (!code_text::PrintableAscii(c) || code_text::RawQuote(c, '"') ||
      c.find("??") != std::string::npos) {
    return Finding("C literal body", c);
  }
  if (emit::CStringLiteral(text) != "\"" + c + "\"") return Finding("C literal", c);
  std::string py = emit::PythonStringBody(text);
  if (!code_text::PrintableAscii(py) || code_text::RawQuote(py, '"') ||
      code_text::RawQuote(py, '\'')) {
    return Finding("Python literal body", py);
  }
  std::string cmake = emit::CMakeQuoted(text);
  std::string_view inner = std::string_view(cmake).substr(1, cmake.size() - 2);
  bool control = std::any_of(cmake.begin(), cmake.end(),
                             [](char c) { return static_cast<uint8_t>(c) < 0x20 || c == 0x7F; });
  if (control || code_text::RawQuote(inner, '"') || code_text::RawQuote(inner, '$')) {
    return Finding("CMake argument", cmake);
  }
  if (!code_text::PrintableAscii(emit::ShellWord(text)) ||
      !code_text::PrintableAscii(emit::LineCommentText(text))) {
    return Finding("shell word or line comment", emit::ShellWord(text));
  }
  return Guard([&] {
    if (!nlohmann::json::parse(emit::JsonString(text)).is_string()) {
      ThrowInternal("JsonString is not a JSON string");
    }
  });
}

// Bytes -> `porttool emit-header`: shape inference, then the arena plan, the weight blob and the
// header, written to a scratch directory.
std::optional<std::string> FuzzEmitHeader(const uint8_t* data, size_t size) {
  bool arena = Selector(data, size) & 1;
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    shape::InferShapes(model);
    emit::EmitRequest request;
    request.header_path = ScratchDir() / "model.h";
    request.weights_path = ScratchDir() / "weights.bin";
    request.prefix = "m";
    request.arena = arena;
    emit::EmitHeaderFiles(model, request);
  });
}

// The executor on one random node: an op from the kernel registry, an opset, up to four constant
// inputs of random type with bounded shapes (dims 0..4, rank 0..4) and arbitrary values (shape
// inputs such as Reshape's or Expand's get whatever int64s the fuzzer picks), and attributes
// drawn from the names kernels read, with random values. Runs one Session over it.
std::optional<std::string> FuzzExecutor(const uint8_t* data, size_t size) {
  static const std::vector<std::string> ops = runtime::KernelRegistry::Default().OpNames();
  static const bool limited = [] {
    // Small caps keep every run inside libFuzzer's malloc limit; the caps are what is tested.
    runtime::SetResourceLimits({.tensor_bytes = 64 << 20, .total_bytes = 256 << 20});
    return true;
  }();
  (void)limited;
  executor::FuzzedDataProvider fdp(data, size);
  io::Model model;
  const std::string& full = ops[fdp.ConsumeIntegralInRange<size_t>(0, ops.size() - 1)];
  auto sep = full.find("::");
  std::string domain = sep == std::string::npos ? "" : full.substr(0, sep);
  if (domain == "ai.onnx") domain.clear();
  std::string op = sep == std::string::npos ? full : full.substr(sep + 2);
  model.proto.set_ir_version(8);
  auto* opset = model.proto.add_opset_import();
  opset->set_domain(domain);
  opset->set_version(domain.empty() ? fdp.ConsumeIntegralInRange(7, 17) : 1);
  auto& graph = *model.proto.mutable_graph();
  graph.set_name("fuzz");
  auto& node = *graph.add_node();
  node.set_name("n0");
  node.set_op_type(op);
  node.set_domain(domain);
  int inputs = fdp.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < inputs; ++i) {
    std::string name = "in" + std::to_string(i);
    if (fdp.ConsumeIntegralInRange(0, 9) == 0) name.clear();  // an omitted optional input
    if (!name.empty()) executor::AddInput(fdp, graph, name);
    node.add_input(name);
  }
  int attrs = fdp.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < attrs; ++i) executor::AddAttribute(fdp, node);
  int outputs = fdp.ConsumeIntegralInRange(1, 3);
  for (int i = 0; i < outputs; ++i) {
    node.add_output("out" + std::to_string(i));
    graph.add_output()->set_name("out" + std::to_string(i));
  }
  return Guard([&] {
    runtime::Session session(model);
    session.Run({});
  });
}

// Bytes -> `porttool infer-shapes` (fixed point with data propagation and contrib schemas).
std::optional<std::string> FuzzInferShapes(const uint8_t* data, size_t size) {
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    shape::InferShapes(model);
  });
}

// Bytes -> `porttool inspect` facts (histogram, params, MACs), which never read weights.
std::optional<std::string> FuzzInspect(const uint8_t* data, size_t size) {
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    analysis::CollectFacts(model);
  });
}

// Bytes -> the rules/targets/facts JSON loaders: the first byte picks fact catalog, decision
// table, target profile (with its port fields, as the commands load it), user facts (checked
// against the shipped catalog), remedies (with their pass ids), or a profile whose checks then
// run on a small model: every check kind with whatever parameters its loader let through.
// The checks of `target` on every node of the demo detector (Conv, Resize, Concat, ...).
void ScanDemoModel(const decide::TargetProfile& target) {
  static const io::Model model =
      io::Load(std::filesystem::path(PORTTOOL_SOURCE_DIR) / "testdata" / "demo_detector.onnx");
  static const decide::AnalyzedModel analyzed(model, {});
  decide::ScanTarget(analyzed, target);
}

std::optional<std::string> FuzzJsonLoaders(const uint8_t* data, size_t size) {
  using namespace porttool::decide;
  static const FactCatalog catalog = FactCatalog::Load(std::filesystem::path(PORTTOOL_SOURCE_DIR) /
                                                       "rules" / "decision" / "facts.json");
  uint8_t which = Selector(data, size) % 6;
  return Guard([&] {
    std::string text(AsView(data, size));
    switch (which) {
      case 0:
        FactCatalog::Load(JsonFile::FromText(text, "facts.json"));
        break;
      case 1:
        LoadDecisionTable(JsonFile::FromText(text, "table.json"), catalog);
        break;
      case 2:
        stages::LoadTargetProfile("", WriteScratch("target.json", text).string());
        break;
      case 3: {
        Facts facts;
        LoadUserFacts(JsonFile::FromText(text, "project.json"), catalog, facts);
        break;
      }
      case 4:
        LoadRemedies(JsonFile::FromText(text, "remedies.json"));
        stages::ValidateRemedyPasses(WriteScratch("remedies.json", text));
        break;
      default:
        ScanDemoModel(LoadTargetFile(WriteScratch("target.json", text)));
    }
  });
}

// Bytes -> io::Load: protobuf parsing, structural checks, external-data path validation.
std::optional<std::string> FuzzModelLoad(const uint8_t* data, size_t size) {
  return Guard([&] { LoadBytes(AsView(data, size)); });
}

// Bytes -> `porttool chain`: the first byte chooses a pipeline of registered passes (each bit of
// it switches one pass on, in registry order, then the order is rotated by the high bits), the
// rest is the model. Covers the graph passes and the stages registered as passes.
std::optional<std::string> FuzzPasses(const uint8_t* data, size_t size) {
  uint8_t choice = Selector(data, size);
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    const auto& registry = passes::Registry();
    std::vector<passes::PipelineStep> steps;
    for (size_t i = 0; i < registry.size(); ++i) {
      size_t k = (i + (choice >> 5)) % registry.size();
      if (choice & (1u << (k % 5))) steps.push_back({registry[k]->id(), {}});
    }
    passes::RunPipeline(model, steps);
  });
}

// Bytes -> `porttool split`: the first two bytes choose which nodes become host nodes (a bit
// pattern repeated over the graph), the rest is the model. The segments are built and written.
std::optional<std::string> FuzzSplit(const uint8_t* data, size_t size) {
  uint16_t pattern = Selector(data, size);
  pattern = static_cast<uint16_t>(pattern << 8 | Selector(data, size));
  return Guard([&] {
    io::Model model = LoadBytes(AsView(data, size));
    std::vector<bool> host(model.proto.graph().node_size());
    for (size_t i = 0; i < host.size(); ++i) host[i] = (pattern >> (i % 16)) & 1;
    ir::SplitResult result = ir::SplitModel(model, host);
    auto dir = ScratchDir() / "split";
    emit::WriteSplit(result, model, dir);
  });
}

// Bytes -> the tensor file readers: the first byte picks .npy or .pb.
std::optional<std::string> FuzzTensorReaders(const uint8_t* data, size_t size) {
  bool npy = Selector(data, size) & 1;
  return Guard([&] {
    auto path = WriteScratch(npy ? "t.npy" : "t.pb", AsView(data, size));
    if (npy) {
      runtime::ReadNpy(path);
    } else {
      runtime::ReadPb(path);
    }
  });
}

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      {"fuzz_check", FuzzCheck},
      {"fuzz_code_text", FuzzCodeText},
      {"fuzz_emit_header", FuzzEmitHeader},
      {"fuzz_executor", FuzzExecutor},
      {"fuzz_infer_shapes", FuzzInferShapes},
      {"fuzz_inspect", FuzzInspect},
      {"fuzz_json_loaders", FuzzJsonLoaders},
      {"fuzz_model_load", FuzzModelLoad},
      {"fuzz_passes", FuzzPasses},
      {"fuzz_split", FuzzSplit},
      {"fuzz_tensor_readers", FuzzTensorReaders},
  };
  return targets;
}

}  // namespace porttool::fuzz
