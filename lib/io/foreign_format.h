// Model files of other frameworks, recognised by their magic bytes so that a user who hands
// porttool a PyTorch checkpoint renamed `.onnx`, a TFLite flatbuffer, a Keras H5 file or a
// TensorFlow SavedModel directory is told what the file is and which exporter makes an ONNX model
// of it, instead of "not a valid ONNX protobuf". Load calls it before parsing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace porttool::io {

struct ForeignFormat {
  std::string what;     // "a PyTorch checkpoint (a torch.save zip archive)"
  std::string convert;  // "export it with torch.onnx.export(model, example_inputs, ...)"
};

// What `path` is when it is a known non-ONNX model (a file or a directory); nullopt otherwise,
// including for files it cannot read (Load reports those).
//   PyTorch / TorchScript  zip ("PK\3\4") with a `<root>/data.pkl` or `archive/` entry;
//                          TorchScript when it also holds `<root>/code/` or constants.pkl
//   Keras 3 (.keras)       zip with config.json and model.weights.h5
//   TFLite                 "TFL3" at offset 4 (the flatbuffer file identifier)
//   HDF5 (Keras .h5)       "\x89HDF\r\n\x1a\n" at offset 0
//   SavedModel             a directory holding saved_model.pb (or that file itself)
std::optional<ForeignFormat> DetectForeignFormat(const std::filesystem::path& path);

}  // namespace porttool::io
