// TensorRT plugin for {{domain|c_comment}}::{{Op|c_comment}}, scaffolded by porttool scaffold-op from node {{node|c_comment}} of
// {{model|c_comment}} (sha256 {{sha256}}). IPluginV3 (TensorRT 10+). The ONNX parser finds a plugin by
// (name = node op_type, version = node attribute plugin_version or "1", namespace = node attribute
// plugin_namespace or ""): here "{{Op|c_comment}}", "{{trt_version|c_comment}}", "{{trt_namespace|c_comment}}".
#pragma once

#include <NvInferRuntime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "{{sym}}.h"

namespace {{sym}}_trt {

constexpr char kPluginName[] = "{{Op|c_string}}";
constexpr char kPluginVersion[] = "{{trt_version|c_string}}";
constexpr char kPluginNamespace[] = "{{trt_namespace|c_string}}";

// One attribute value as the plugin keeps (and serializes) it.
struct AttributeValue {
  int32_t type = 0;  // PT_ATTR_*
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

class {{Sym}}Plugin : public nvinfer1::IPluginV3,
                      public nvinfer1::IPluginV3OneCore,
                      public nvinfer1::IPluginV3OneBuild,
                      public nvinfer1::IPluginV3OneRuntime {
 public:
  // `attributes`: the node's attributes by name (absent ones keep the source node's values).
  explicit {{Sym}}Plugin(std::map<std::string, AttributeValue> attributes);
  {{Sym}}Plugin(const {{Sym}}Plugin& other);
  {{Sym}}Plugin& operator=(const {{Sym}}Plugin&) = delete;
  ~{{Sym}}Plugin() override = default;

  // False when an attribute is rejected by the kernel (createPlugin then returns nullptr).
  bool valid() const { return valid_; }

  // IPluginV3
  nvinfer1::IPluginCapability* getCapabilityInterface(
      nvinfer1::PluginCapabilityType type) noexcept override;
  nvinfer1::IPluginV3* clone() noexcept override;

  // IPluginV3OneCore
  char const* getPluginName() const noexcept override { return kPluginName; }
  char const* getPluginVersion() const noexcept override { return kPluginVersion; }
  char const* getPluginNamespace() const noexcept override { return kPluginNamespace; }

  // IPluginV3OneBuild
  int32_t configurePlugin(nvinfer1::DynamicPluginTensorDesc const* in, int32_t nbInputs,
                          nvinfer1::DynamicPluginTensorDesc const* out,
                          int32_t nbOutputs) noexcept override;
  int32_t getOutputDataTypes(nvinfer1::DataType* outputTypes, int32_t nbOutputs,
                             nvinfer1::DataType const* inputTypes,
                             int32_t nbInputs) const noexcept override;
  int32_t getOutputShapes(nvinfer1::DimsExprs const* inputs, int32_t nbInputs,
                          nvinfer1::DimsExprs const* shapeInputs, int32_t nbShapeInputs,
                          nvinfer1::DimsExprs* outputs, int32_t nbOutputs,
                          nvinfer1::IExprBuilder& exprBuilder) noexcept override;
  bool supportsFormatCombination(int32_t pos, nvinfer1::DynamicPluginTensorDesc const* inOut,
                                 int32_t nbInputs, int32_t nbOutputs) noexcept override;
  int32_t getNbOutputs() const noexcept override { return {{num_outputs}}; }
  size_t getWorkspaceSize(nvinfer1::DynamicPluginTensorDesc const* inputs, int32_t nbInputs,
                          nvinfer1::DynamicPluginTensorDesc const* outputs,
                          int32_t nbOutputs) const noexcept override;

  // IPluginV3OneRuntime
  int32_t setTactic(int32_t tactic) noexcept override;
  int32_t onShapeChange(nvinfer1::PluginTensorDesc const* in, int32_t nbInputs,
                        nvinfer1::PluginTensorDesc const* out, int32_t nbOutputs) noexcept override;
  int32_t enqueue(nvinfer1::PluginTensorDesc const* inputDesc,
                  nvinfer1::PluginTensorDesc const* outputDesc, void const* const* inputs,
                  void* const* outputs, void* workspace, cudaStream_t stream) noexcept override;
  nvinfer1::IPluginV3* attachToContext(nvinfer1::IPluginResourceContext* context) noexcept override;
  nvinfer1::PluginFieldCollection const* getFieldsToSerialize() noexcept override;

 private:
  void BuildParams();

  std::map<std::string, AttributeValue> attributes_;
  {{sym}}_params params_;
  bool valid_ = true;
  std::vector<nvinfer1::PluginField> fields_;
  nvinfer1::PluginFieldCollection field_collection_{};
  std::vector<std::vector<unsigned char>> host_inputs_, host_outputs_;
  std::vector<unsigned char> host_scratch_;
};

class {{Sym}}PluginCreator : public nvinfer1::IPluginCreatorV3One {
 public:
  {{Sym}}PluginCreator();
  char const* getPluginName() const noexcept override { return kPluginName; }
  char const* getPluginVersion() const noexcept override { return kPluginVersion; }
  char const* getPluginNamespace() const noexcept override { return kPluginNamespace; }
  nvinfer1::PluginFieldCollection const* getFieldNames() noexcept override;
  nvinfer1::IPluginV3* createPlugin(char const* name, nvinfer1::PluginFieldCollection const* fc,
                                    nvinfer1::TensorRTPhase phase) noexcept override;

 private:
  std::vector<nvinfer1::PluginField> fields_;
  nvinfer1::PluginFieldCollection field_collection_{};
};

// For applications that link the plugin in: registers the creator with the global registry.
bool Register{{Sym}}PluginCreator();

}  // namespace {{sym}}_trt
