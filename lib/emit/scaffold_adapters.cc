// scaffold-op's SDK adapters (scaffold_adapters.h). Their files are templates under
// lib/emit/templates/{ort,rknn,tensorrt,tflm}/ (embedded_files.h); the code here computes the
// values that vary with the op (type tables, attribute tables, shape rules, model patches).
#include "lib/emit/scaffold_adapters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/emit/embedded_files.h"
#include "lib/ir/dtype.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

using shape::CustomOpSpec;
using util::Join;

// ONNX Runtime owns the standard domains and com.microsoft (its contrib ops, e.g. Gelu): a custom
// op registered there is never the one that runs, so the adapter uses a domain of its own and the
// model patch moves the node into it.
std::string OrtDomain(const std::string& domain) {
  static const char* const kOwned[] = {"",
                                       "ai.onnx",
                                       "ai.onnx.ml",
                                       "ai.onnx.training",
                                       "ai.onnx.preview.training",
                                       "com.microsoft",
                                       "com.microsoft.nchwc"};
  for (const char* d : kOwned) {
    if (domain == d) return "porttool.custom";
  }
  return domain;
}

struct DtypeNames {
  int32_t onnx;
  const char* ort;    // ONNX_TENSOR_ELEMENT_DATA_TYPE_<ort>
  const char* numpy;  // np.<numpy>
  const char* trt;    // nvinfer1::DataType::<trt>, "" if TensorRT has none
};

const DtypeNames& Names(int32_t dtype) {
  static const DtypeNames kNames[] = {
      {1, "FLOAT", "float32", "kFLOAT"},
      {2, "UINT8", "uint8", "kUINT8"},
      {3, "INT8", "int8", "kINT8"},
      {4, "UINT16", "uint16", ""},
      {5, "INT16", "int16", ""},
      {6, "INT32", "int32", "kINT32"},
      {7, "INT64", "int64", "kINT64"},
      {9, "BOOL", "bool_", "kBOOL"},
      {10, "FLOAT16", "float16", "kHALF"},
      {11, "DOUBLE", "float64", ""},
      {12, "UINT32", "uint32", ""},
      {13, "UINT64", "uint64", ""},
      {16, "BFLOAT16", "float32", "kBF16"},
  };
  for (const auto& n : kNames) {
    if (n.onnx == dtype) return n;
  }
  ThrowBadInput("scaffold-op: ONNX dtype {} has no adapter mapping", dtype);
}

const char* PtAttrType(int32_t type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return "PT_ATTR_FLOAT";
    case onnx::AttributeProto::INT:
      return "PT_ATTR_INT";
    case onnx::AttributeProto::STRING:
      return "PT_ATTR_STRING";
    case onnx::AttributeProto::FLOATS:
      return "PT_ATTR_FLOATS";
    default:
      return "PT_ATTR_INTS";
  }
}

// "{"alpha", PT_ATTR_FLOAT}, ..., {NULL, 0}": the attribute table every adapter walks.
std::string AttributeTable(const CustomOpSpec& spec, const char* null) {
  std::string rows;
  for (const auto& a : spec.attributes) {
    rows += fmt::format("    {{{}, {}}},\n", CStringLiteral(a.name), PtAttrType(a.type));
  }
  return rows + fmt::format("    {{{}, 0}},\n", null);
}

// Output dims of the static shape rule, one brace list per output.
std::vector<std::string> StaticDims(const CustomOpSpec& spec) {
  std::vector<std::string> out;
  for (const auto& o : spec.outputs) {
    std::vector<std::string> d;
    for (int64_t v : o.shape) d.push_back(std::to_string(v));
    out.push_back("{" + Join(d, ", ") + "}");
  }
  return out;
}

// A paragraph template spliced into a line of another (a README's model patch): its text
// without the final newline the file ends with.
std::string Paragraph(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string VarOf(const ScaffoldVars& vars, const std::string& name) {
  for (const auto& [k, v] : vars) {
    if (k == name) return v;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// ONNX Runtime
// ---------------------------------------------------------------------------------------------

AdapterFiles OrtAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  std::vector<std::string> in_types, optional, out_types;
  for (const auto& t : spec.inputs) {
    in_types.push_back(std::string("ONNX_TENSOR_ELEMENT_DATA_TYPE_") + Names(t.dtype).ort);
    optional.push_back(t.optional ? "true" : "false");
  }
  for (const auto& t : spec.outputs) {
    out_types.push_back(std::string("ONNX_TENSOR_ELEMENT_DATA_TYPE_") + Names(t.dtype).ort);
  }
  std::string ort_domain = OrtDomain(spec.domain);
  bool same = spec.shape_rule == "same_as_input";
  std::string static_dims;
  if (!same) {
    static_dims = "const std::vector<int64_t> kOutputDims[kNumOutputs] = {" +
                  Join(StaticDims(spec), ", ") + "};\n";
  }
  vars.push_back({"ort_domain", ort_domain});
  vars.push_back({"ort_model", ort_domain != spec.domain ? "patched.onnx" : spec.source_model});
  vars.push_back({"ort_patch", Paragraph(FillTemplate(
                                   Template(ort_domain != spec.domain ? "ort/patch_move_domain.md"
                                                                      : "ort/patch_none.md"),
                                   vars))});
  vars.push_back({"ort_input_types", Join(in_types, ", ")});
  vars.push_back({"ort_input_optional", Join(optional, ", ")});
  vars.push_back({"ort_output_types", Join(out_types, ", ")});
  vars.push_back({"ort_static_dims", static_dims});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"shape_input", std::to_string(spec.shape_input)});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back(
      {"ort_output_dims", same ? fmt::format("output_dims[i] = input_dims[{}];", spec.shape_input)
                               : "output_dims[i] = kOutputDims[i];"});
  vars.push_back({"ort_infer", FillTemplate(same ? Template("ort/infer_same_as_input.cc")
                                                 : Template("ort/infer_static.cc"),
                                            vars)});
  AdapterFiles out;
  out.files["ort/" + spec.symbol + "_ort.cc"] = FillTemplate(Template("ort/adapter.cc"), vars);
  out.files["ort/exports.lds"] = FillTemplate(Template("ort/exports.lds"), vars);
  out.files["ort/stub/onnxruntime_c_api.h"] =
      FillTemplate(Template("ort/stub/onnxruntime_c_api.h"), vars);
  out.files["ort/README.md"] = FillTemplate(Template("ort/README.md"), vars);
  out.cmake = FillTemplate(Template("ort/adapter.cmake"), vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// RKNN
// ---------------------------------------------------------------------------------------------

// The numpy transcription of a known kernel's formula: @f( -> _f(, C float literals lose their
// suffix, p->name -> p.name.
std::string PyFormula(const std::string& formula) {
  std::string f = util::ReplaceAll(formula, "@", "_");
  f = std::regex_replace(f, std::regex("([0-9]+\\.[0-9]*(?:[eE][-+]?[0-9]+)?)f"), "$1");
  return util::ReplaceAll(f, "p->", "p.");
}

AdapterFiles RknnAdapter(const CustomOpSpec& spec, ScaffoldVars vars, const std::string& formula,
                         bool bias) {
  // The RKNN op type names the toolkit's Python class and module file as well: an identifier
  // (SanitizeCIdentifier keeps ordinary op types as they are), never a path or code.
  std::string ident = SanitizeCIdentifier(spec.op_type);
  std::string op = ident.rfind("cst", 0) == 0 ? ident : "cst" + ident;
  std::string defaults;
  for (const auto& a : spec.attributes) {
    if (a.type == onnx::AttributeProto::STRING) continue;  // RKNN carries no string attributes
    defaults += fmt::format("    {}: {},\n", PythonStringLiteral(a.name), a.default_value.dump());
  }
  std::string infer;
  if (spec.shape_rule == "same_as_input") {
    std::vector<std::string> shapes(spec.outputs.size(),
                                    fmt::format("in_shapes[{}]", spec.shape_input));
    std::vector<std::string> types(spec.outputs.size(),
                                   fmt::format("in_dtypes[{}]", spec.shape_input));
    infer = fmt::format("        return [{}], [{}]\n", Join(shapes, ", "), Join(types, ", "));
  } else {
    std::vector<std::string> shapes, types;
    for (const auto& d : StaticDims(spec)) shapes.push_back("[" + d.substr(1, d.size() - 2) + "]");
    for (const auto& o : spec.outputs) types.push_back(std::string("np.") + Names(o.dtype).numpy);
    infer = fmt::format("        return [{}], [{}]\n", Join(shapes, ", "), Join(types, ", "));
  }
  std::string compute;
  if (formula.empty()) {
    compute = FillTemplate(
        "        raise NotImplementedError(\"{{domain|py_string}}::{{Op|py_string}}: write "
        "compute() (as in "
        "kernel/{{sym}}.c)\")\n",
        vars);
  } else {
    compute =
        "        p = self._params(node)\n        x = np.asarray(inputs[0], dtype=np.float32)\n";
    if (bias) {
      compute +=
          "        if len(inputs) > 1 and inputs[1] is not None:\n"
          "            x = x + np.asarray(inputs[1], dtype=np.float32)\n";
    }
    compute += "        return [np.asarray(" + PyFormula(formula) + ", dtype=np.float32)]\n";
  }
  vars.push_back({"rknn_op", op});
  vars.push_back({"attribute_table", AttributeTable(spec, "NULL")});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back({"py_defaults", defaults});
  vars.push_back({"py_shape_infer", infer});
  vars.push_back({"py_compute", compute});
  AdapterFiles out;
  out.files["rknn/" + spec.symbol + "_rknn.h"] = FillTemplate(Template("rknn/adapter.h"), vars);
  out.files["rknn/" + spec.symbol + "_rknn.c"] = FillTemplate(Template("rknn/adapter.c"), vars);
  out.files["rknn/librkcst_" + spec.symbol + ".c"] = FillTemplate(Template("rknn/plugin.c"), vars);
  out.files["rknn/" + op + "_toolkit.py"] = FillTemplate(Template("rknn/toolkit.py"), vars);
  out.files["rknn/README.md"] = FillTemplate(Template("rknn/README.md"), vars);
  out.cmake = FillTemplate(Template("rknn/adapter.cmake"), vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// TensorRT
// ---------------------------------------------------------------------------------------------

AdapterFiles TrtAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  auto trt_type = [&](int32_t dtype) {
    std::string t = Names(dtype).trt;
    if (t.empty()) {
      ThrowBadInput("TensorRT adapter: TensorRT has no {} tensors (node {})", ir::DtypeName(dtype),
                    spec.source_node);
    }
    return "DataType::" + t;
  };
  std::vector<std::string> in_types, out_types, in_onnx, out_onnx, fields;
  for (const auto& t : spec.inputs) {
    in_types.push_back(trt_type(t.dtype));
    in_onnx.push_back(std::to_string(t.dtype));
  }
  for (const auto& t : spec.outputs) {
    out_types.push_back(trt_type(t.dtype));
    out_onnx.push_back(std::to_string(t.dtype));
  }
  std::string version = "1", ns;
  for (const auto& a : spec.attributes) {
    if (a.name == "plugin_version" && a.default_value.is_string())
      version = a.default_value.get<std::string>();
    if (a.name == "plugin_namespace" && a.default_value.is_string())
      ns = a.default_value.get<std::string>();
    fields.push_back(
        fmt::format("`{}` {}", MarkdownText(a.name), shape::AttributeTypeName(a.type)));
  }
  bool same = spec.shape_rule == "same_as_input";
  vars.push_back({"trt_version", version});
  vars.push_back({"trt_namespace", ns});
  vars.push_back({"trt_fields", fields.empty() ? "none" : Join(fields, ", ")});
  vars.push_back({"trt_input_types", Join(in_types, ", ")});
  vars.push_back({"trt_output_types", Join(out_types, ", ")});
  vars.push_back({"onnx_input_types", Join(in_onnx, ", ")});
  vars.push_back({"onnx_output_types", Join(out_onnx, ", ")});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"shape_input", std::to_string(spec.shape_input)});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back(
      {"trt_static_dims", same ? ""
                               : "const std::vector<int64_t> kOutputDims[kNumOutputs] = {" +
                                     Join(StaticDims(spec), ", ") + "};\n"});
  vars.push_back({"trt_shapes", FillTemplate(same ? Template("tensorrt/shapes_same_as_input.cpp")
                                                  : Template("tensorrt/shapes_static.cpp"),
                                             vars)});
  vars.push_back({"trt_model", spec.source_model});
  AdapterFiles out;
  out.files["tensorrt/" + VarOf(vars, "Sym") + "Plugin.h"] =
      FillTemplate(Template("tensorrt/plugin.h"), vars);
  out.files["tensorrt/" + VarOf(vars, "Sym") + "Plugin.cpp"] =
      FillTemplate(Template("tensorrt/plugin.cpp"), vars);
  out.files["tensorrt/README.md"] = FillTemplate(Template("tensorrt/README.md"), vars);
  out.cmake = FillTemplate(Template("tensorrt/adapter.cmake"), vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// TFLite Micro
// ---------------------------------------------------------------------------------------------

AdapterFiles TflmAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  std::vector<std::string> in_onnx, attrs;
  for (const auto& t : spec.inputs) in_onnx.push_back(std::to_string(t.dtype));
  for (const auto& a : spec.attributes) {
    attrs.push_back(fmt::format("`{}` {}", MarkdownText(a.name), shape::AttributeTypeName(a.type)));
  }
  vars.push_back({"onnx_input_types", Join(in_onnx, ", ")});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"tflm_attrs", attrs.empty() ? "none" : Join(attrs, ", ")});
  AdapterFiles out;
  out.files["tflm/" + spec.symbol + "_tflm.h"] = FillTemplate(Template("tflm/adapter.h"), vars);
  out.files["tflm/" + spec.symbol + "_tflm.cc"] = FillTemplate(Template("tflm/adapter.cc"), vars);
  out.files["tflm/README.md"] = FillTemplate(Template("tflm/README.md"), vars);
  out.cmake = FillTemplate(Template("tflm/adapter.cmake"), vars);
  return out;
}

// Variables holding text from the model or the command line (op_type, domain, node and file
// names, attribute strings): a template must say how each use is quoted, `{{Op|c_string}}`, and
// a bare `{{Op}}` is porttool's bug.
bool FreeText(std::string_view name) {
  static const char* const kFreeText[] = {"Op",        "domain",      "node",
                                          "model",     "ort_domain",  "ort_model",
                                          "trt_model", "trt_version", "trt_namespace"};
  return std::any_of(std::begin(kFreeText), std::end(kFreeText),
                     [&](const char* v) { return name == v; });
}

// The value of a placeholder through its filter (code_text.h names the rules of each).
std::string Filtered(std::string_view name, std::string_view filter, const std::string& value) {
  if (filter == "c_comment") return CommentText(value);
  if (filter == "c_string") return CStringBody(value);
  if (filter == "py_string") return PythonStringBody(value);
  if (filter == "cmake") return CMakeQuoted(value);
  if (filter == "line_comment") return LineCommentText(value);
  if (filter == "sh") return ShellWord(value);
  if (filter == "json") return JsonString(value);
  if (filter == "md") return MarkdownText(value);
  if (!filter.empty())
    ThrowInternal("template placeholder {{{{{}|{}}}}}: no such filter", name, filter);
  if (FreeText(name)) {
    ThrowInternal("template placeholder {{{{{}}}}} holds model text: it needs a filter", name);
  }
  return value;
}

bool IsIdentifier(std::string_view name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace

std::string FillTemplate(std::string_view templ, const ScaffoldVars& vars) {
  // One pass over the template: values are inserted as they are, never scanned again, so a node
  // or model name holding "{{" cannot be mistaken for a placeholder.
  std::string text;
  text.reserve(templ.size());
  size_t at = 0;
  for (size_t open; (open = templ.find("{{", at)) != std::string_view::npos;) {
    text.append(templ, at, open - at);
    size_t close = templ.find("}}", open + 2);
    std::string_view inner = close == std::string_view::npos
                                 ? std::string_view()
                                 : templ.substr(open + 2, close - open - 2);
    size_t bar = inner.find('|');
    std::string_view name = inner.substr(0, bar);
    std::string_view filter = bar == std::string_view::npos ? "" : inner.substr(bar + 1);
    // Only "{{identifier}}" or "{{identifier|filter}}" is a placeholder: generated C++ may hold
    // "{{1, 2}}" initialisers.
    if (!IsIdentifier(name) || (bar != std::string_view::npos && !IsIdentifier(filter))) {
      text += '{';  // a literal brace; the next one may open a placeholder ("{{{sym}}...")
      at = open + 1;
      continue;
    }
    auto var =
        std::find_if(vars.begin(), vars.end(), [&](const auto& kv) { return kv.first == name; });
    if (var == vars.end()) ThrowInternal("template placeholder {{{{{}}}}} left unfilled", name);
    text += Filtered(name, filter, var->second);
    at = close + 2;
  }
  text.append(templ, at);
  return text;
}

const std::vector<std::string>& AdapterTargets() {
  static const std::vector<std::string> kTargets = {"ort", "rknn", "tensorrt", "tflm"};
  return kTargets;
}

std::vector<std::string> ParseAdapterTargets(const std::string& list) {
  const auto& all = AdapterTargets();
  if (list.empty() || list == "all") return all;
  std::vector<bool> chosen(all.size(), false);
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(begin, end - begin);
    auto it = std::find(all.begin(), all.end(), item);
    if (it == all.end()) {
      ThrowUsage("unknown adapter target '{}' (known: {}; a comma-separated list, or all)", item,
                 Join(all, ", "));
    }
    chosen[it - all.begin()] = true;
    begin = end + 1;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (chosen[i]) out.push_back(all[i]);
  }
  return out;
}

AdapterFiles GenerateAdapter(const std::string& target, const CustomOpSpec& spec,
                             const ScaffoldVars& vars, const std::string& formula, bool bias) {
  if (target == "ort") return OrtAdapter(spec, vars);
  if (target == "rknn") return RknnAdapter(spec, vars, formula, bias);
  if (target == "tensorrt") return TrtAdapter(spec, vars);
  if (target == "tflm") return TflmAdapter(spec, vars);
  ThrowUsage("unknown adapter target '{}'", target);
}

}  // namespace porttool::emit
