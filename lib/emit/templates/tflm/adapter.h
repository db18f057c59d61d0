// TFLite Micro registration for the custom op "{{Op|c_comment}}" ({{domain|c_comment}}::{{Op|c_comment}}), scaffolded by porttool
// scaffold-op (source sha256 {{sha256}}).
#pragma once

#include "tensorflow/lite/micro/kernels/kernel_util.h"

namespace {{sym}}_tflm {

// The .tflite CUSTOM operator's custom_code, and the name to AddCustom() it under.
constexpr char kCustomName[] = "{{Op|c_string}}";

// init (attributes from custom_options), prepare (checks, scratch request), invoke (the kernel).
TFLMRegistration* Register_{{SYM}}();

}  // namespace {{sym}}_tflm
