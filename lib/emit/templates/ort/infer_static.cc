// Shape rule static: the output shapes recorded in op.json.
OrtStatus* ORT_API_CALL InferOutputShape(const OrtCustomOp*, OrtShapeInferContext* context) noexcept {
  const OrtApi* api = Api();
  for (size_t i = 0; i < kNumOutputs; ++i) {
    OrtTensorTypeAndShapeInfo* info = nullptr;
    PT_ORT_RETURN_IF_ERROR(api->CreateTensorTypeAndShapeInfo(&info));
    OrtStatus* status = api->SetTensorElementType(info, kOutputTypes[i]);
    if (status == nullptr) {
      status = api->SetDimensions(info, kOutputDims[i].data(), kOutputDims[i].size());
    }
    if (status == nullptr) status = api->ShapeInferContext_SetOutputTypeShape(context, i, info);
    api->ReleaseTensorTypeAndShapeInfo(info);
    if (status != nullptr) return status;
  }
  return nullptr;
}
