// Shape rule same_as_input: every output has the type and shape of input {{shape_input}}.
OrtStatus* ORT_API_CALL InferOutputShape(const OrtCustomOp*, OrtShapeInferContext* context) noexcept {
  const OrtApi* api = Api();
  OrtTensorTypeAndShapeInfo* input = nullptr;  // owned by the context: not released here
  PT_ORT_RETURN_IF_ERROR(api->ShapeInferContext_GetInputTypeShape(context, {{shape_input}}, &input));
  for (size_t i = 0; i < kNumOutputs; ++i) {
    PT_ORT_RETURN_IF_ERROR(api->ShapeInferContext_SetOutputTypeShape(context, i, input));
  }
  return nullptr;
}
