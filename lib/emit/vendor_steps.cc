// The vendor step (vendor_steps.h): one writer per tool. Every option name is in the templates
// (lib/emit/templates/rknn/vendor/, tensorrt/vendor/, stedgeai/); the code below decides which
// template applies and fills in names, paths and numbers.
#include "lib/emit/vendor_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/emit/embedded_files.h"
#include "lib/emit/scaffold_adapters.h"
#include "lib/io/atomic_file.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

class Writer {
 public:
  Writer(const fs::path& bundle, VendorStepResult& result) : bundle_(bundle), result_(result) {}
  void Text(const std::string& rel, const std::string& text) {
    io::CreateOutputDir((bundle_ / rel).parent_path());
    io::WriteFileAtomic(bundle_ / rel, text);
    result_.files.push_back(rel);
  }
  void Npy(const std::string& rel, const runtime::Tensor& t) {
    io::CreateOutputDir((bundle_ / rel).parent_path());
    runtime::WriteNpy(bundle_ / rel, t);
    result_.files.push_back(rel);
  }

 private:
  fs::path bundle_;
  VendorStepResult& result_;
};

// ---- small renderers ------------------------------------------------------------------------

// The value a toolkit computing in float32 sees, printed as its shortest decimal: 123.675, not
// 123.67500000000001 (the double of mean / scale).
double AsFloat32(double v) { return std::stod(fmt::format("{}", static_cast<float>(v))); }

std::string PyNumber(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // n: inf, nan
  return s;
}

bool HasObject(const Json& j) {
  return std::any_of(j.begin(), j.end(), [](const Json& e) { return e.is_object(); });
}

// A Python literal of `j`: dicts one key a line, lists of plain values on one line. Strings are
// PythonStringBody in double quotes (code_text.h: tensor and file names may hold any bytes).
std::string PyLiteral(const Json& j, int indent = 0) {
  const std::string pad(indent, ' '), inner(indent + 4, ' ');
  switch (j.type()) {
    case Json::value_t::null:
      return "None";
    case Json::value_t::boolean:
      return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_float:
      return PyNumber(j.get<double>());
    case Json::value_t::string:
      return PythonStringLiteral(j.get<std::string>());
    case Json::value_t::object: {
      if (j.empty()) return "{}";
      std::string out = "{\n";
      for (const auto& [key, value] : j.items()) {
        out += inner + PythonStringLiteral(key) + ": " + PyLiteral(value, indent + 4) + ",\n";
      }
      return out + pad + "}";
    }
    case Json::value_t::array: {
      if (!HasObject(j)) {
        std::vector<std::string> parts;
        for (const auto& e : j) parts.push_back(PyLiteral(e, indent));
        return "[" + util::Join(parts, ", ") + "]";
      }
      std::string out = "[\n";
      for (const auto& e : j) out += inner + PyLiteral(e, indent + 4) + ",\n";
      return out + pad + "]";
    }
    default:
      return j.dump();  // integers
  }
}

std::string Plural(size_t n, const char* what) { return fmt::format("{} {}(s)", n, what); }

std::string Code(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const auto& n : names) quoted.push_back("`" + MarkdownText(n) + "`");
  return util::Join(quoted, ", ");
}

// The precision the tool gives porttool's `kind` ("float" | "int16") nodes; empty when it has
// none, which `missing` then says.
std::string RaisedPrecision(const VendorToolSpec& tool, const std::string& kind) {
  auto it = tool.raised_precision.find(kind);
  return it == tool.raised_precision.end() ? "" : it->second;
}

// Drops the names whose kind the tool has no precision for, saying so in `missing`.
void KeepExpressible(const VendorToolSpec& tool, const std::string& target,
                     const std::string& segment, const std::string& kind,
                     std::vector<std::string>& names, VendorStepResult& r) {
  if (names.empty() || !RaisedPrecision(tool, kind).empty()) return;
  r.missing.push_back(fmt::format(
      "{} {}: {} has no precision for the {} node(s) porttool {} ({}): the target profile's "
      "vendor_tool.raised_precision names none, so the tool would quantize them to int8",
      target, segment, tool.tool, names.size(), kind == "float" ? "kept float" : "raised to int16",
      util::Join(names, ", ")));
  names.clear();
}

// ---- rknn-toolkit2 ----------------------------------------------------------------------------

// Pixels back from porttool's normalised tensor: x = t * std_value + mean_value per channel.
runtime::Tensor ToPixels(const runtime::Tensor& t, const PixelInput& p) {
  if (t.dtype() != onnx::TensorProto::FLOAT || p.channel_axis >= t.rank()) {
    ThrowInternal("pixel input {} is not a float tensor with a channel axis {}", t.DebugString(),
                  p.channel_axis);
  }
  runtime::Tensor out(onnx::TensorProto::FLOAT, t.shape());
  int64_t inner = 1;
  for (int a = p.channel_axis + 1; a < t.rank(); ++a) inner *= t.dim(a);
  const int64_t channels = t.dim(p.channel_axis);
  if (static_cast<size_t>(channels) != p.mean.size() || p.std.size() != p.mean.size()) {
    ThrowInternal("pixel input has {} channels, its normalisation {}", channels, p.mean.size());
  }
  std::vector<float> mean_value, std_value;
  for (int64_t c = 0; c < channels; ++c) {
    mean_value.push_back(static_cast<float>(p.MeanValue(c)));
    std_value.push_back(static_cast<float>(p.StdValue(c)));
  }
  const float* in = t.data<float>();
  float* o = out.mutable_data<float>();
  for (int64_t i = 0; i < t.size(); ++i) {
    const int64_t c = (i / inner) % channels;
    o[i] = in[i] * std_value[c] + mean_value[c];
  }
  return out;
}

std::string DatasetList(const VendorSegment& seg, bool first) {
  return first ? "dataset.txt" : "dataset_" + seg.stem + ".txt";
}

// rknn/dataset/<segment>/<sample>.<input>.npy for every calibration sample, and the segment's
// list of them: one line per sample, its inputs in the segment's order.
void WriteDatasets(const VendorStepRequest& req, Writer& w) {
  const VendorCalibration& cal = *req.calibration;
  std::vector<std::vector<std::string>> file_names;
  std::vector<std::string> lists(req.segments.size());
  for (const auto& seg : req.segments) {
    file_names.push_back(runtime::TensorFileNames(seg.inputs, ".npy"));
  }
  for (size_t k = 0; k < cal.samples; ++k) {
    runtime::TensorMap tensors = cal.sample(k);
    for (size_t s = 0; s < req.segments.size(); ++s) {
      const VendorSegment& seg = req.segments[s];
      std::vector<std::string> line;
      for (size_t i = 0; i < seg.inputs.size(); ++i) {
        auto it = tensors.find(seg.inputs[i]);
        if (it == tensors.end()) {
          ThrowInternal("calibration sample {} has no tensor '{}' for segment {}", k, seg.inputs[i],
                        seg.stem);
        }
        std::string rel = fmt::format("dataset/{}/{:04d}.{}", seg.stem, k, file_names[s][i]);
        auto pixel = seg.pixel_inputs.find(seg.inputs[i]);
        w.Npy("rknn/" + rel,
              pixel == seg.pixel_inputs.end() ? it->second : ToPixels(it->second, pixel->second));
        line.push_back(rel);
      }
      lists[s] += util::Join(line, " ") + "\n";
    }
  }
  for (size_t s = 0; s < req.segments.size(); ++s) {
    w.Text("rknn/" + DatasetList(req.segments[s], s == 0), lists[s]);
  }
}

Json PixelJson(const PixelInput& p) {
  Json mean = Json::array(), std = Json::array();
  for (size_t c = 0; c < p.mean.size(); ++c) {
    mean.push_back(AsFloat32(p.MeanValue(c)));
    std.push_back(AsFloat32(p.StdValue(c)));
  }
  return {{"mean_values", mean}, {"std_values", std}, {"channel_axis", p.channel_axis}};
}

Json RknnSegmentJson(const VendorSegment& seg, bool first, bool quantized) {
  Json pixels = Json::object();
  for (const auto& [name, p] : seg.pixel_inputs) pixels[name] = PixelJson(p);
  Json dims = Json::array();
  for (const auto& d : seg.input_dims) dims.push_back(d);
  return {{"name", seg.stem},
          {"onnx", seg.file},
          {"rknn", "segments/" + seg.stem + ".rknn"},
          {"inputs", seg.inputs},
          {"input_size_list", dims},
          {"outputs", seg.outputs},
          {"dataset", quantized ? Json(DatasetList(seg, first)) : Json(nullptr)},
          {"pixel_inputs", pixels},
          {"float_outputs", seg.float_outputs},
          {"int16_outputs", seg.int16_outputs}};
}

std::string RknnHybridText(const VendorStepRequest& req) {
  std::vector<std::string> parts;
  size_t count = 0;
  for (const auto& seg : req.segments) {
    for (const auto& [outputs, kind] :
         {std::pair{&seg.float_outputs, "float"}, std::pair{&seg.int16_outputs, "int16"}}) {
      if (outputs->empty()) continue;
      count += outputs->size();
      parts.push_back(fmt::format("in {}, {} ({}) -> {}", seg.stem, Code(*outputs),
                                  kind == std::string("float") ? "kept float" : "raised to int16",
                                  RaisedPrecision(*req.tool, kind)));
    }
  }
  if (count == 0) {
    return "- No hybrid quantization: porttool quantized every quantizable node of these segments "
           "to int8.\n";
  }
  return FillTemplate(Template("rknn/vendor/hybrid.md"), {{"layer_count", std::to_string(count)},
                                                          {"layer_text", util::Join(parts, "; ")}});
}

std::string RknnQuantizationSection(const VendorStepRequest& req) {
  const VendorToolSpec& tool = *req.tool;
  if (!req.calibration) {
    return FillTemplate(Template("rknn/vendor/float.md"),
                        {{"platform", tool.platform}, {"float_dtype", tool.float_precision}});
  }
  const VendorCalibration& cal = *req.calibration;
  static const std::map<std::string, std::pair<std::string, std::string>> kAlgorithm = {
      {"minmax", {"normal", "Both take each tensor's min/max."}},
      {"entropy",
       {"kl_divergence",
        "Both minimise the KL divergence of the quantized histogram; the "
        "histogram bins and search grid differ."}},
      {"mse", {"mmse", "Both minimise the mean squared quantization error; the search differs."}},
      {"percentile",
       {"mmse",
        "The toolkit has no percentile clipping: mmse also clips rare outliers, at the "
        "range of least squared error instead of a fixed share of the values, so the "
        "ranges differ."}}};
  auto algorithm = kAlgorithm.find(cal.method);
  if (algorithm == kAlgorithm.end()) ThrowInternal("unknown calibration method '{}'", cal.method);
  return FillTemplate(
      Template("rknn/vendor/quantized.md"),
      {{"platform", tool.platform},
       {"algorithm", algorithm->second.first},
       {"method", cal.per_channel ? "channel" : "layer"},
       {"float_dtype_text",
        tool.float_precision.empty() ? "" : ", float_dtype='" + tool.float_precision + "'"},
       {"porttool_method", cal.method},
       {"weights_text", cal.per_channel ? "per-channel" : "per-tensor"},
       {"algorithm_text", algorithm->second.second},
       {"symmetric_text", cal.symmetric ? " (porttool's were symmetric, zero point 0: the "
                                          "toolkit has no such option)"
                                        : ", as porttool's"},
       {"samples", std::to_string(cal.samples)},
       {"hybrid_text", RknnHybridText(req)}});
}

std::string Numbers(const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (double v : values) parts.push_back(PyNumber(AsFloat32(v)));
  return "[" + util::Join(parts, ", ") + "]";
}

std::string ScaleText(double scale) {
  return std::fabs(scale * 255.0 - 1.0) < 1e-12 ? "1/255" : PyNumber(scale);
}

std::string RknnNormalizationSection(const VendorStepRequest& req) {
  if (!req.calibration) return "";
  for (const auto& seg : req.segments) {
    for (const auto& [name, p] : seg.pixel_inputs) {
      std::vector<double> mean_values, std_values;
      for (size_t c = 0; c < p.mean.size(); ++c) {
        mean_values.push_back(p.MeanValue(c));
        std_values.push_back(p.StdValue(c));
      }
      return FillTemplate(Template("rknn/vendor/pixels.md"), {{"input", MarkdownText(name)},
                                                              {"segment", MarkdownText(seg.stem)},
                                                              {"scale", ScaleText(p.scale)},
                                                              {"mean", Numbers(p.mean)},
                                                              {"std", Numbers(p.std)},
                                                              {"mean_values", Numbers(mean_values)},
                                                              {"std_values", Numbers(std_values)},
                                                              {"channel_order", p.channel_order}});
    }
  }
  return "";
}

std::string RknnConvertPy(const VendorStepRequest& q) {
  const VendorToolSpec& tool = *q.tool;
  Json segments = Json::array();
  for (size_t s = 0; s < q.segments.size(); ++s) {
    segments.push_back(RknnSegmentJson(q.segments[s], s == 0, q.calibration.has_value()));
  }
  Json raised = Json::object();
  for (const auto& [kind, precision] : tool.raised_precision) raised[kind] = precision;
  Json calibration = nullptr;
  if (q.calibration) {
    calibration = {{"method", q.calibration->method},
                   {"per_channel", q.calibration->per_channel},
                   {"symmetric", q.calibration->symmetric}};
  }
  return FillTemplate(
      Template("rknn/vendor/convert.py"),
      {{"target", q.target},
       {"toolkit_version", tool.version},
       {"platform", tool.platform},
       {"float_dtype",
        tool.float_precision.empty() ? "None" : PythonStringLiteral(tool.float_precision)},
       {"quantize", q.calibration ? "True" : "False"},
       {"calibration", PyLiteral(calibration)},
       {"raised_precision", PyLiteral(raised)},
       {"segments", PyLiteral(segments)}});
}

std::string RknnReadme(const VendorStepRequest& q) {
  std::string rows;
  for (size_t s = 0; s < q.segments.size(); ++s) {
    const VendorSegment& seg = q.segments[s];
    rows += fmt::format("| `{}` | `segments/{}.rknn` | {} | {} |\n", MarkdownText(seg.file),
                        MarkdownText(seg.stem), Code(seg.inputs),
                        q.calibration ? "`rknn/" + DatasetList(seg, s == 0) + "`" : "none");
  }
  return FillTemplate(Template("rknn/vendor/README.md"),
                      {{"target", q.target},
                       {"toolkit_version", q.tool->version},
                       {"platform", q.tool->platform},
                       {"segment_rows", rows},
                       {"quantization_section", RknnQuantizationSection(q)},
                       {"normalization_section", RknnNormalizationSection(q)},
                       {"quantized_note", q.calibration ? " (porttool's int8 included)" : ""},
                       {"toolkit_quantization",
                        q.calibration ? ", and it quantizes again on the same samples by its own "
                                        "rules (the int8 ranges are the toolkit's, not porttool's)"
                                      : ""}});
}

std::string RknnDetails(const VendorStepRequest& q) {
  size_t layers = 0;
  for (const auto& seg : q.segments) layers += seg.float_outputs.size() + seg.int16_outputs.size();
  std::string what =
      !q.calibration
          ? "float (" + q.tool->float_precision + ", no quantization)"
          : fmt::format(
                "int8 on the {} calibration sample(s) in rknn/dataset/, {}", q.calibration->samples,
                layers == 0
                    ? std::string("no layer kept at higher precision")
                    : Plural(layers, "layer") + " kept at higher precision (hybrid quantization)");
  return fmt::format("rknn/: convert.py for rknn-toolkit2 {} (target_platform {}), {}, {}",
                     q.tool->version, q.tool->platform,
                     Plural(q.segments.size(), "accelerator segment"), what);
}

void WriteRknn(const VendorStepRequest& req, Writer& w, VendorStepResult& r) {
  VendorStepRequest q = req;  // with the layers the tool cannot express dropped
  const VendorToolSpec& tool = *q.tool;
  if (!q.calibration && tool.float_precision.empty()) {
    r.missing.push_back(fmt::format(
        "{}: the NPU computes no float (the profile's vendor_tool has no float_precision), so "
        "a port without calibration data has no conversion to it; port with calibration data "
        "for the int8 conversion",
        q.target));
    return;
  }
  for (auto& seg : q.segments) {
    if (!q.calibration) {
      seg.float_outputs.clear();
      seg.int16_outputs.clear();
      seg.pixel_inputs.clear();  // no preprocessing spec without calibration
    }
    KeepExpressible(tool, q.target, seg.stem, "float", seg.float_outputs, r);
    KeepExpressible(tool, q.target, seg.stem, "int16", seg.int16_outputs, r);
  }
  w.Text("rknn/convert.py", RknnConvertPy(q));
  w.Text("rknn/README.md", RknnReadme(q));
  if (q.calibration) WriteDatasets(q, w);
  r.details.push_back(RknnDetails(q));
}

// ---- trtexec ----------------------------------------------------------------------------------

// TensorRT's version as its calibration cache header writes it (NV_TENSORRT_VERSION: major *
// 1000 + minor * 100 + patch), or empty when `version` is not "major.minor.patch".
std::string TensorrtVersionCode(const std::string& version) {
  std::vector<std::string> parts = util::Split(version, '.');
  if (parts.size() != 3) return "";
  int code = 0;
  for (int i = 0; i < 3; ++i) {
    if (parts[i].empty() || parts[i].size() > 2 ||
        !std::all_of(parts[i].begin(), parts[i].end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return "";
    }
    code += std::stoi(parts[i]) * (i == 0 ? 1000 : i == 1 ? 100 : 1);
  }
  return std::to_string(code);
}

// porttool's cache with the header trtexec's calibrator accepts: the scales are the same for any
// calibrator, the header only says which one may read them.
std::string TensorrtCache(const std::string& cache, const std::string& header) {
  size_t eol = cache.find('\n');
  return header + (eol == std::string::npos ? "\n" : cache.substr(eol));
}

// The layers held above int8 on the trtexec lines, for the README.
struct HeldLayers {
  size_t count = 0;
  std::set<std::string> precisions;
  std::vector<std::string> text;  // "<segment>: `node`, ..."
};

std::string TrtexecInt8Line(const VendorStepRequest& req, const VendorSegment& seg,
                            HeldLayers& held, VendorStepResult& r) {
  const VendorToolSpec& tool = *req.tool;
  std::vector<std::string> float_nodes = seg.float_nodes, int16_nodes = seg.int16_nodes;
  KeepExpressible(tool, req.target, seg.stem, "float", float_nodes, r);
  KeepExpressible(tool, req.target, seg.stem, "int16", int16_nodes, r);
  std::vector<std::string> specs, named;
  for (const auto& [nodes, kind] :
       {std::pair{&float_nodes, "float"}, std::pair{&int16_nodes, "int16"}}) {
    for (const auto& node : *nodes) {
      // The spec is "name:precision[,...]": a name holding ',' or ':' cannot be written.
      if (node.find_first_of(",:") != std::string::npos) {
        r.missing.push_back(fmt::format(
            "{} {}: node '{}' ({}) cannot be named in trtexec's layer precision list (it holds "
            "',' or ':'): set its precision through the TensorRT API",
            req.target, seg.stem, node, kind));
        continue;
      }
      held.precisions.insert(RaisedPrecision(tool, kind));
      specs.push_back(node + ":" + RaisedPrecision(tool, kind));
      named.push_back(node);
    }
  }
  held.count += named.size();
  if (!named.empty()) held.text.push_back(seg.stem + ": " + Code(named));
  std::string constraints = specs.empty()
                                ? ""
                                : FillTemplate(Template("tensorrt/vendor/layer_precisions.txt"),
                                               {{"layers", ShellWord(util::Join(specs, ","))}});
  return FillTemplate(Template("tensorrt/vendor/trtexec_int8.txt"),
                      {{"onnx", ShellWord(seg.file)},
                       {"engine", ShellWord("tensorrt/" + seg.stem + ".engine")},
                       {"cache", "tensorrt/calibration.cache"},
                       {"layer_precisions", constraints}});
}

// The README's section on precision: fp16, or the calibration cache and the held layers.
std::string TensorrtPrecisionSection(const VendorStepRequest& req, const std::string& header,
                                     const HeldLayers& held) {
  if (!req.calibration) return std::string(Template("tensorrt/vendor/float.md"));
  std::string layers;
  if (held.count > 0) {
    layers = FillTemplate(
        Template("tensorrt/vendor/layers.md"),
        {{"layer_count", std::to_string(held.count)},
         {"precisions", util::Join({held.precisions.begin(), held.precisions.end()}, "/")},
         {"layer_text", util::Join(held.text, "; ")}});
  }
  return FillTemplate(Template("tensorrt/vendor/quantized.md"),
                      {{"header", header},
                       {"version", req.tool->version},
                       {"method", req.calibration->method},
                       {"samples", std::to_string(req.calibration->samples)},
                       {"layers_text", layers}});
}

// The commands of a script, indented as a Markdown code block.
std::string Indented(const std::string& commands) {
  std::string out;
  for (const auto& line : util::Split(commands, '\n')) {
    if (!line.empty()) out += "    " + line + "\n";
  }
  return out;
}

void WriteTensorrt(const VendorStepRequest& req, Writer& w, VendorStepResult& r) {
  const VendorToolSpec& tool = *req.tool;
  if (!req.calibration && tool.float_precision != "fp16") {
    r.missing.push_back(fmt::format(
        "{}: porttool's trtexec step builds fp16 engines, the profile's vendor_tool says the "
        "target computes '{}'",
        req.target, tool.float_precision));
    return;
  }
  std::string header;
  if (req.calibration) {
    std::string code = TensorrtVersionCode(tool.version);
    if (code.empty()) {
      r.missing.push_back(
          fmt::format("{}: the profile's vendor_tool.version '{}' is not major.minor.patch, so the "
                      "calibration cache cannot name the TensorRT version that reads it",
                      req.target, tool.version));
      return;
    }
    header =
        FillTemplate(Template("tensorrt/vendor/calibration_header.txt"), {{"version_code", code}});
  }
  std::string commands;
  HeldLayers held;
  for (const auto& seg : req.segments) {
    commands += req.calibration
                    ? TrtexecInt8Line(req, seg, held, r)
                    : FillTemplate(Template("tensorrt/vendor/trtexec_float.txt"),
                                   {{"onnx", ShellWord(seg.file)},
                                    {"engine", ShellWord("tensorrt/" + seg.stem + ".engine")}});
  }
  if (req.calibration) {
    w.Text("tensorrt/calibration.cache", TensorrtCache(req.calibration->tensorrt_cache, header));
  }
  w.Text("tensorrt/build_engine.sh",
         FillTemplate(Template("tensorrt/vendor/build_engine.sh"),
                      {{"version", tool.version}, {"target", req.target}, {"commands", commands}}));
  w.Text("tensorrt/README.md",
         FillTemplate(Template("tensorrt/vendor/README.md"),
                      {{"version", tool.version},
                       {"target", req.target},
                       {"lines", Indented(commands)},
                       {"precision_section", TensorrtPrecisionSection(req, header, held)}}));
  r.details.push_back(fmt::format(
      "tensorrt/: build_engine.sh, one trtexec {} line per accelerator segment ({}){}",
      tool.version, req.segments.size(),
      req.calibration ? fmt::format(", int8 from calibration.cache, {} held at higher precision",
                                    Plural(held.count, "layer"))
                      : ", fp16"));
}

// ---- stedgeai ---------------------------------------------------------------------------------

void WriteStedgeai(const VendorStepRequest& req, Writer& w, VendorStepResult& r) {
  const VendorToolSpec& tool = *req.tool;
  std::string commands;
  for (const auto& seg : req.segments) {
    const bool qdq = req.calibration && !seg.qdq_file.empty();
    if (qdq && !seg.int16_nodes.empty()) {
      r.missing.push_back(fmt::format(
          "{} {}: its QDQ segment has {} int16 node(s) ({}); ST Edge AI Core imports QDQ int8 "
          "(the profile's sources), so stedgeai may refuse them: keep them float instead",
          req.target, seg.stem, seg.int16_nodes.size(), util::Join(seg.int16_nodes, ", ")));
    }
    commands += FillTemplate(Template("stedgeai/generate_line.txt"),
                             {{"model", qdq ? seg.qdq_file : seg.file},
                              {"platform", tool.platform},
                              {"name", SanitizeCIdentifier("net_" + seg.stem)},
                              {"output", ShellWord("stedgeai/" + seg.stem)}});
  }
  w.Text("stedgeai/generate.sh",
         FillTemplate(Template("stedgeai/generate.sh"),
                      {{"version", tool.version}, {"target", req.target}, {"commands", commands}}));
  w.Text(
      "stedgeai/README.md",
      FillTemplate(Template("stedgeai/README.md"),
                   {{"version", tool.version},
                    {"target", req.target},
                    {"platform", tool.platform},
                    {"lines", Indented(commands)},
                    {"model_text",
                     req.calibration ? "the QDQ segment (`segments/<segment>.qdq.onnx`): int8 with "
                                       "porttool's calibration table, its kept-float nodes float32"
                                     : "the float segment (float32 C code; porttool ported without "
                                       "calibration data)"}}));
  r.details.push_back(fmt::format(
      "stedgeai/: generate.sh, one stedgeai {} line per segment ({}), "
      "target {}, {} model",
      tool.version, req.segments.size(), tool.platform, req.calibration ? "QDQ int8" : "float"));
}

}  // namespace

VendorStepResult WriteVendorSteps(const VendorStepRequest& request, const fs::path& bundle) {
  VendorStepResult r;
  if (request.segments.empty()) return r;  // nothing runs on the accelerator
  if (!request.tool) {
    r.missing.push_back(
        fmt::format("{}: no step from the bundle to the device is known (the target profile has no "
                    "vendor_tool section naming the tool that converts a segment)",
                    request.target));
    return r;
  }
  Writer w(bundle, r);
  const std::string& tool = request.tool->tool;
  if (tool == "rknn-toolkit2") {
    WriteRknn(request, w, r);
  } else if (tool == "trtexec") {
    WriteTensorrt(request, w, r);
  } else if (tool == "stedgeai") {
    WriteStedgeai(request, w, r);
  } else if (tool == "none") {
    r.details.push_back(fmt::format("no vendor step: target {} loads the segment files as they are",
                                    request.target));
  } else {
    ThrowInternal("vendor tool '{}' passed the profile check but has no writer", tool);
  }
  std::sort(r.files.begin(), r.files.end());
  return r;
}

}  // namespace porttool::emit
