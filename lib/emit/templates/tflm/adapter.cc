// TFLite Micro adapter for "{{Op|c_comment}}" over kernel/{{sym}}.c, scaffolded by porttool scaffold-op from
// node {{node|c_comment}} of {{model|c_comment}} (sha256 {{sha256}}). No heap: the attribute copies live in the
// persistent arena, the kernel's scratch in the scratch arena (requested in prepare).
// Layout: the kernel indexes NCHW; a .tflite converted from NCHW ONNX usually holds NHWC tensors.
// Elementwise ops do not care; any other op must be given (or transposed to) NCHW.
#include "{{sym}}_tflm.h"

#include <string.h>

#include "flatbuffers/flexbuffers.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"

#include "{{sym}}.h"

namespace {{sym}}_tflm {
namespace {

constexpr int kMaxInputs = {{max_inputs}};
constexpr int kMinInputs = {{min_inputs}};
constexpr int kNumOutputs = {{num_outputs}};
constexpr int kMaxRank = 8;
const int32_t kInputTypes[kMaxInputs] = {{{onnx_input_types}}};

struct AttributeSpec {
  const char* name;
  int32_t type;  // PT_ATTR_*
};
// The node's attributes (op.json); the list ends with a null name.
const AttributeSpec kAttributes[] = {
{{attribute_table}}};

struct OpData {
  {{sym}}_params params;
  int scratch_index;
};

// TfLiteType -> ONNX dtype (0: not taken by the kernel).
int32_t OnnxType(TfLiteType type) {
  switch (type) {
    case kTfLiteFloat32: return 1;
    case kTfLiteUInt8: return 2;
    case kTfLiteInt8: return 3;
    case kTfLiteInt32: return 6;
    case kTfLiteInt64: return 7;
    default: return 0;
  }
}

bool Describe(TfLiteType type, const TfLiteIntArray* dims, void* data, int64_t* storage,
              pt_tensor* out) {
  if (dims->size > kMaxRank) return false;
  for (int i = 0; i < dims->size; ++i) storage[i] = dims->data[i];
  out->dtype = OnnxType(type);
  out->rank = dims->size;
  out->dims = storage;
  out->data = data;
  return out->dtype != 0;
}

// Attributes come from the operator's custom_options, a flexbuffer map keyed by attribute name;
// an attribute it does not hold keeps the source node's value.
void* Init(TfLiteContext* context, const char* buffer, size_t length) {
  OpData* d = static_cast<OpData*>(context->AllocatePersistentBuffer(context, sizeof(OpData)));
  if (d == nullptr) return nullptr;
  d->params = {{sym}}_default_params();
  d->scratch_index = -1;
  if (buffer == nullptr || length == 0) return d;
  const flexbuffers::Map m =
      flexbuffers::GetRoot(reinterpret_cast<const uint8_t*>(buffer), length).AsMap();
  for (int i = 0; kAttributes[i].name != nullptr; ++i) {
    const flexbuffers::Reference r = m[kAttributes[i].name];
    if (r.IsNull()) continue;
    pt_attribute a;
    memset(&a, 0, sizeof a);
    a.name = kAttributes[i].name;
    a.type = kAttributes[i].type;
    if (a.type == PT_ATTR_FLOAT) {
      a.f = r.AsFloat();
    } else if (a.type == PT_ATTR_INT) {
      a.i = r.AsInt64();
    } else if (a.type == PT_ATTR_STRING) {
      const flexbuffers::String s = r.AsString();
      char* copy = static_cast<char*>(context->AllocatePersistentBuffer(context, s.length() + 1));
      if (copy == nullptr) return nullptr;
      memcpy(copy, s.c_str(), s.length() + 1);
      a.s = copy;
    } else {  // an array: a typed or an untyped flexbuffer vector
      const bool typed = r.IsTypedVector();
      const flexbuffers::TypedVector tv = r.AsTypedVector();
      const flexbuffers::Vector v = r.AsVector();
      const size_t n = typed ? tv.size() : v.size();
      a.count = static_cast<int64_t>(n);
      if (a.type == PT_ATTR_FLOATS) {
        float* copy = static_cast<float*>(
            context->AllocatePersistentBuffer(context, sizeof(float) * (n + 1)));
        if (copy == nullptr) return nullptr;
        for (size_t j = 0; j < n; ++j) copy[j] = (typed ? tv[j] : v[j]).AsFloat();
        a.floats = copy;
      } else {
        int64_t* copy = static_cast<int64_t*>(
            context->AllocatePersistentBuffer(context, sizeof(int64_t) * (n + 1)));
        if (copy == nullptr) return nullptr;
        for (size_t j = 0; j < n; ++j) copy[j] = (typed ? tv[j] : v[j]).AsInt64();
        a.ints = copy;
      }
    }
    if ({{sym}}_set_attribute(&d->params, &a) != PT_OK) {
      MicroPrintf("{{Op|c_string}}: attribute %s rejected", a.name);
      return nullptr;
    }
  }
  return d;
}

TfLiteStatus Prepare(TfLiteContext* context, TfLiteNode* node) {
  OpData* d = static_cast<OpData*>(node->user_data);
  TF_LITE_ENSURE(context, d != nullptr);
  const int n_in = node->inputs->size;
  TF_LITE_ENSURE(context, n_in >= kMinInputs && n_in <= kMaxInputs);
  TF_LITE_ENSURE_EQ(context, node->outputs->size, kNumOutputs);
  tflite::MicroContext* micro = tflite::GetMicroContext(context);
  pt_tensor inputs[kMaxInputs];
  int64_t dims[kMaxInputs][kMaxRank];
  memset(inputs, 0, sizeof inputs);
  bool ok = true;
  for (int i = 0; i < n_in; ++i) {
    inputs[i].dtype = kInputTypes[i];
    TfLiteTensor* t = micro->AllocateTempInputTensor(node, i);
    if (t == nullptr) continue;  // an absent optional input
    ok = ok && Describe(t->type, t->dims, nullptr, dims[i], &inputs[i]) &&
         inputs[i].dtype == kInputTypes[i];
    micro->DeallocateTempTfLiteTensor(t);
  }
  TF_LITE_ENSURE_MSG(context, ok, "{{Op|c_string}}: input dtype or rank the kernel does not take");
  const size_t bytes = {{sym}}_scratch_size(&d->params, inputs, n_in);
  if (bytes > 0) {
    TF_LITE_ENSURE_STATUS(
        context->RequestScratchBufferInArena(context, bytes, &d->scratch_index));
  }
  return kTfLiteOk;
}

TfLiteStatus Invoke(TfLiteContext* context, TfLiteNode* node) {
  const OpData* d = static_cast<const OpData*>(node->user_data);
  const int n_in = node->inputs->size;
  pt_tensor inputs[kMaxInputs], outputs[kNumOutputs];
  int64_t in_dims[kMaxInputs][kMaxRank], out_dims[kNumOutputs][kMaxRank];
  memset(inputs, 0, sizeof inputs);
  memset(outputs, 0, sizeof outputs);
  for (int i = 0; i < n_in; ++i) {
    inputs[i].dtype = kInputTypes[i];
    const TfLiteEvalTensor* t = tflite::micro::GetEvalInput(context, node, i);
    if (t == nullptr) continue;
    TF_LITE_ENSURE(context, Describe(t->type, t->dims, t->data.data, in_dims[i], &inputs[i]));
  }
  for (int i = 0; i < kNumOutputs; ++i) {
    TfLiteEvalTensor* t = tflite::micro::GetEvalOutput(context, node, i);
    TF_LITE_ENSURE(context, t != nullptr);
    TF_LITE_ENSURE(context, Describe(t->type, t->dims, t->data.data, out_dims[i], &outputs[i]));
  }
  void* scratch = d->scratch_index >= 0 ? context->GetScratchBuffer(context, d->scratch_index)
                                        : nullptr;
  const int32_t status = {{sym}}_compute(&d->params, inputs, n_in, outputs, kNumOutputs, scratch);
  if (status != PT_OK) {
    MicroPrintf("%s", {{sym}}_status_string(status));
    return kTfLiteError;
  }
  return kTfLiteOk;
}

}  // namespace

TFLMRegistration* Register_{{SYM}}() {
  static TFLMRegistration registration = tflite::micro::RegisterOp(Init, Prepare, Invoke);
  return &registration;
}

}  // namespace {{sym}}_tflm
