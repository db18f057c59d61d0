// TensorRT plugin for {{domain|c_comment}}::{{Op|c_comment}}: a thin layer over kernel/{{sym}}.c, scaffolded by porttool
// scaffold-op (source sha256 {{sha256}}). The kernel runs on the host: enqueue copies the inputs
// from the device, computes, and copies the outputs back (correct first; for speed, replace the
// body of enqueue with a CUDA kernel that mirrors kernel/{{sym}}.c and keep the rest).
#include "{{Sym}}Plugin.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <exception>

namespace {{sym}}_trt {

using namespace nvinfer1;

namespace {

struct AttributeSpec {
  const char* name;
  int32_t type;  // PT_ATTR_*
};
// The node's attributes (op.json); the list ends with a null name.
const AttributeSpec kAttributes[] = {
{{attribute_table}}};

constexpr int32_t kNumInputs = {{max_inputs}};
constexpr int32_t kNumOutputs = {{num_outputs}};
const DataType kInputTypes[kNumInputs] = {{{trt_input_types}}};
const int32_t kInputOnnxTypes[kNumInputs] = {{{onnx_input_types}}};
const DataType kOutputTypes[kNumOutputs] = {{{trt_output_types}}};
const int32_t kOutputOnnxTypes[kNumOutputs] = {{{onnx_output_types}}};
{{trt_static_dims}}
size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kINT64: return 8;
    case DataType::kFLOAT:
    case DataType::kINT32: return 4;
    case DataType::kHALF:
    case DataType::kBF16: return 2;
    default: return 1;
  }
}

int64_t Volume(Dims const& d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d.nbDims; ++i) n *= d.d[i];
  return n;
}

// A plugin field as numbers (TensorRT passes ONNX INT attributes as kINT32 or kINT64).
bool Numbers(PluginField const& f, std::vector<double>* out) {
  out->clear();
  for (int32_t i = 0; i < f.length; ++i) {
    switch (f.type) {
      case PluginFieldType::kFLOAT32: out->push_back(static_cast<float const*>(f.data)[i]); break;
      case PluginFieldType::kFLOAT64: out->push_back(static_cast<double const*>(f.data)[i]); break;
      case PluginFieldType::kINT8: out->push_back(static_cast<int8_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT16: out->push_back(static_cast<int16_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT32: out->push_back(static_cast<int32_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT64:
        out->push_back(static_cast<double>(static_cast<int64_t const*>(f.data)[i]));
        break;
      default: return false;
    }
  }
  return true;
}

}  // namespace

{{Sym}}Plugin::{{Sym}}Plugin(std::map<std::string, AttributeValue> attributes)
    : attributes_(std::move(attributes)) {
  BuildParams();
}

{{Sym}}Plugin::{{Sym}}Plugin(const {{Sym}}Plugin& other)
    : nvinfer1::IPluginV3(),
      nvinfer1::IPluginV3OneCore(),
      nvinfer1::IPluginV3OneBuild(),
      nvinfer1::IPluginV3OneRuntime(),
      attributes_(other.attributes_) {
  BuildParams();  // params_ point into attributes_: rebuilt for the copy
}

void {{Sym}}Plugin::BuildParams() {
  params_ = {{sym}}_default_params();
  fields_.clear();
  for (auto& [name, v] : attributes_) {
    pt_attribute a;
    std::memset(&a, 0, sizeof a);
    a.name = name.c_str();
    a.type = v.type;
    a.f = v.f;
    a.i = v.i;
    a.s = v.s.c_str();
    a.count = v.type == PT_ATTR_FLOATS ? static_cast<int64_t>(v.floats.size())
                                       : static_cast<int64_t>(v.ints.size());
    a.floats = v.floats.data();
    a.ints = v.ints.data();
    if ({{sym}}_set_attribute(&params_, &a) != PT_OK) valid_ = false;
    switch (v.type) {
      case PT_ATTR_FLOAT: fields_.emplace_back(name.c_str(), &v.f, PluginFieldType::kFLOAT32, 1); break;
      case PT_ATTR_INT: fields_.emplace_back(name.c_str(), &v.i, PluginFieldType::kINT64, 1); break;
      case PT_ATTR_STRING:
        fields_.emplace_back(name.c_str(), v.s.c_str(), PluginFieldType::kCHAR,
                             static_cast<int32_t>(v.s.size()));
        break;
      case PT_ATTR_FLOATS:
        fields_.emplace_back(name.c_str(), v.floats.data(), PluginFieldType::kFLOAT32,
                             static_cast<int32_t>(v.floats.size()));
        break;
      default:
        fields_.emplace_back(name.c_str(), v.ints.data(), PluginFieldType::kINT64,
                             static_cast<int32_t>(v.ints.size()));
    }
  }
  field_collection_.nbFields = static_cast<int32_t>(fields_.size());
  field_collection_.fields = fields_.data();
}

IPluginCapability* {{Sym}}Plugin::getCapabilityInterface(PluginCapabilityType type) noexcept {
  switch (type) {
    case PluginCapabilityType::kBUILD: return static_cast<IPluginV3OneBuild*>(this);
    case PluginCapabilityType::kRUNTIME: return static_cast<IPluginV3OneRuntime*>(this);
    case PluginCapabilityType::kCORE: return static_cast<IPluginV3OneCore*>(this);
  }
  return nullptr;
}

IPluginV3* {{Sym}}Plugin::clone() noexcept {
  try {
    return new {{Sym}}Plugin(*this);
  } catch (const std::exception&) {
    return nullptr;
  }
}

int32_t {{Sym}}Plugin::configurePlugin(DynamicPluginTensorDesc const*, int32_t,
                                       DynamicPluginTensorDesc const*, int32_t) noexcept {
  return 0;
}

int32_t {{Sym}}Plugin::getOutputDataTypes(DataType* outputTypes, int32_t nbOutputs,
                                          DataType const* inputTypes,
                                          int32_t nbInputs) const noexcept {
  (void)inputTypes;
  (void)nbInputs;
  for (int32_t i = 0; i < nbOutputs && i < kNumOutputs; ++i) outputTypes[i] = kOutputTypes[i];
  return 0;
}

int32_t {{Sym}}Plugin::getOutputShapes(DimsExprs const* inputs, int32_t nbInputs,
                                       DimsExprs const*, int32_t, DimsExprs* outputs,
                                       int32_t nbOutputs, IExprBuilder& exprBuilder) noexcept {
{{trt_shapes}}}

// Linear (row-major) layout, the op's declared dtypes: what the kernel takes.
bool {{Sym}}Plugin::supportsFormatCombination(int32_t pos, DynamicPluginTensorDesc const* inOut,
                                              int32_t nbInputs, int32_t) noexcept {
  DataType want = pos < nbInputs ? kInputTypes[pos] : kOutputTypes[pos - nbInputs];
  return inOut[pos].desc.format == TensorFormat::kLINEAR && inOut[pos].desc.type == want;
}

size_t {{Sym}}Plugin::getWorkspaceSize(DynamicPluginTensorDesc const*, int32_t,
                                       DynamicPluginTensorDesc const*, int32_t) const noexcept {
  return 0;  // the host-side scratch lives in the plugin (onShapeChange)
}

int32_t {{Sym}}Plugin::setTactic(int32_t) noexcept { return 0; }

int32_t {{Sym}}Plugin::onShapeChange(PluginTensorDesc const* in, int32_t nbInputs,
                                     PluginTensorDesc const* out, int32_t nbOutputs) noexcept {
  try {
    host_inputs_.resize(nbInputs);
    host_outputs_.resize(nbOutputs);
    for (int32_t i = 0; i < nbInputs; ++i) {
      host_inputs_[i].resize(static_cast<size_t>(Volume(in[i].dims)) * ElementSize(in[i].type));
    }
    for (int32_t i = 0; i < nbOutputs; ++i) {
      host_outputs_[i].resize(static_cast<size_t>(Volume(out[i].dims)) *
                              ElementSize(out[i].type));
    }
    return 0;
  } catch (const std::exception&) {
    return -1;
  }
}

int32_t {{Sym}}Plugin::enqueue(PluginTensorDesc const* inputDesc,
                               PluginTensorDesc const* outputDesc, void const* const* inputs,
                               void* const* outputs, void*, cudaStream_t stream) noexcept {
  try {
    const int32_t n_in = static_cast<int32_t>(host_inputs_.size());
    const int32_t n_out = static_cast<int32_t>(host_outputs_.size());
    if (n_in > kNumInputs || n_out != kNumOutputs) return -1;
    pt_tensor in[kNumInputs], out[kNumOutputs];
    std::vector<int64_t> in_dims[kNumInputs], out_dims[kNumOutputs];
    std::memset(in, 0, sizeof in);
    std::memset(out, 0, sizeof out);
    for (int32_t i = 0; i < n_in; ++i) {
      auto& host = host_inputs_[i];
      if (cudaMemcpyAsync(host.data(), inputs[i], host.size(), cudaMemcpyDeviceToHost, stream) !=
          cudaSuccess) {
        return -1;
      }
      in_dims[i].assign(inputDesc[i].dims.d, inputDesc[i].dims.d + inputDesc[i].dims.nbDims);
      in[i] = {kInputOnnxTypes[i], inputDesc[i].dims.nbDims, in_dims[i].data(), host.data()};
    }
    for (int32_t i = 0; i < n_out; ++i) {
      out_dims[i].assign(outputDesc[i].dims.d, outputDesc[i].dims.d + outputDesc[i].dims.nbDims);
      out[i] = {kOutputOnnxTypes[i], outputDesc[i].dims.nbDims, out_dims[i].data(),
                host_outputs_[i].data()};
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess) return -1;
    host_scratch_.resize({{sym}}_scratch_size(&params_, in, n_in));
    if ({{sym}}_compute(&params_, in, n_in, out, n_out,
                        host_scratch_.empty() ? nullptr : host_scratch_.data()) != PT_OK) {
      return -1;
    }
    for (int32_t i = 0; i < n_out; ++i) {
      if (cudaMemcpyAsync(outputs[i], host_outputs_[i].data(), host_outputs_[i].size(),
                          cudaMemcpyHostToDevice, stream) != cudaSuccess) {
        return -1;
      }
    }
    // The host buffers are reused by the next enqueue: wait for the copies.
    return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

IPluginV3* {{Sym}}Plugin::attachToContext(IPluginResourceContext*) noexcept { return clone(); }

PluginFieldCollection const* {{Sym}}Plugin::getFieldsToSerialize() noexcept {
  return &field_collection_;
}

{{Sym}}PluginCreator::{{Sym}}PluginCreator() {
  for (size_t i = 0; kAttributes[i].name != nullptr; ++i) {
    PluginFieldType type = PluginFieldType::kINT32;
    switch (kAttributes[i].type) {
      case PT_ATTR_FLOAT:
      case PT_ATTR_FLOATS: type = PluginFieldType::kFLOAT32; break;
      case PT_ATTR_STRING: type = PluginFieldType::kCHAR; break;
      default: break;
    }
    fields_.emplace_back(kAttributes[i].name, nullptr, type, 0);
  }
  field_collection_.nbFields = static_cast<int32_t>(fields_.size());
  field_collection_.fields = fields_.data();
}

PluginFieldCollection const* {{Sym}}PluginCreator::getFieldNames() noexcept {
  return &field_collection_;
}

// Plugin fields named like the node's attributes (the ONNX parser passes them so); fields this op
// does not declare (plugin_version, plugin_namespace, ...) are ignored.
IPluginV3* {{Sym}}PluginCreator::createPlugin(char const*, PluginFieldCollection const* fc,
                                              TensorRTPhase) noexcept {
  try {
    std::map<std::string, AttributeValue> attributes;
    std::vector<double> numbers;
    for (int32_t i = 0; fc != nullptr && i < fc->nbFields; ++i) {
      PluginField const& f = fc->fields[i];
      const AttributeSpec* spec = nullptr;
      for (size_t k = 0; kAttributes[k].name != nullptr; ++k) {
        if (std::strcmp(kAttributes[k].name, f.name) == 0) spec = &kAttributes[k];
      }
      if (spec == nullptr || f.data == nullptr) continue;
      AttributeValue v;
      v.type = spec->type;
      if (spec->type == PT_ATTR_STRING) {
        if (f.type != PluginFieldType::kCHAR) return nullptr;
        v.s.assign(static_cast<char const*>(f.data), static_cast<size_t>(f.length));
        v.s = v.s.c_str();  // drop a terminating NUL counted in length
      } else {
        if (!Numbers(f, &numbers) || numbers.empty()) return nullptr;
        if (spec->type == PT_ATTR_FLOAT) v.f = static_cast<float>(numbers[0]);
        if (spec->type == PT_ATTR_INT) v.i = static_cast<int64_t>(numbers[0]);
        for (double n : numbers) {
          if (spec->type == PT_ATTR_FLOATS) v.floats.push_back(static_cast<float>(n));
          if (spec->type == PT_ATTR_INTS) v.ints.push_back(static_cast<int64_t>(n));
        }
      }
      attributes[spec->name] = std::move(v);
    }
    auto* plugin = new {{Sym}}Plugin(std::move(attributes));
    if (!plugin->valid()) {
      delete plugin;
      return nullptr;
    }
    return plugin;
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool Register{{Sym}}PluginCreator() {
  static {{Sym}}PluginCreator creator;
  return getPluginRegistry()->registerCreator(creator, kPluginNamespace);
}

}  // namespace {{sym}}_trt

// The plugin-library interface IPluginRegistry::loadLibrary (and trtexec --dynamicPlugins) uses.
extern "C" {
__attribute__((visibility("default"))) void setLoggerFinder(nvinfer1::ILoggerFinder*) {}
__attribute__((visibility("default"))) nvinfer1::IPluginCreatorInterface* const* getCreators(
    int32_t& nbCreators) {
  static {{sym}}_trt::{{Sym}}PluginCreator creator;
  static nvinfer1::IPluginCreatorInterface* const creators[] = {&creator};
  nbCreators = 1;
  return creators;
}
}
