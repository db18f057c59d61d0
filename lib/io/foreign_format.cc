#include "lib/io/foreign_format.h"

#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "lib/util/strings.h"

namespace porttool::io {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kZipMagic("PK\x03\x04", 4);
constexpr std::string_view kHdf5Magic("\x89HDF\r\n\x1a\n", 8);
constexpr std::string_view kTfliteId("TFL3", 4);
// A zip's central directory of a model archive is small; a larger claim is not read.
constexpr uint64_t kMaxCentralDirectory = 16u << 20;

uint32_t Le(const std::string& s, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

std::string ReadAt(std::ifstream& in, uint64_t offset, uint64_t size) {
  std::string out(size, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(out.data(), static_cast<std::streamsize>(size));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

// The entry names of a zip archive, from its central directory (empty when it cannot be found).
std::vector<std::string> ZipEntryNames(std::ifstream& in, uint64_t file_size) {
  // The end-of-central-directory record is the last 22 bytes plus a comment of up to 64 KiB.
  uint64_t tail = std::min<uint64_t>(file_size, 22 + 65535);
  std::string end = ReadAt(in, file_size - tail, tail);
  size_t eocd = end.rfind(std::string_view("PK\x05\x06", 4));
  if (eocd == std::string::npos || eocd + 22 > end.size()) return {};
  uint64_t cd_size = Le(end, eocd + 12, 4), cd_offset = Le(end, eocd + 16, 4);
  if (cd_size > kMaxCentralDirectory || cd_offset + cd_size > file_size) return {};
  std::string cd = ReadAt(in, cd_offset, cd_size);
  std::vector<std::string> names;
  for (size_t at = 0; at + 46 <= cd.size() && cd.compare(at, 4, "PK\x01\x02", 4) == 0;) {
    size_t name_len = Le(cd, at + 28, 2), extra = Le(cd, at + 30, 2), comment = Le(cd, at + 32, 2);
    if (at + 46 + name_len > cd.size()) break;
    names.push_back(cd.substr(at + 46, name_len));
    at += 46 + name_len + extra + comment;
  }
  return names;
}

bool AnyName(const std::vector<std::string>& names, bool (*match)(const std::string&)) {
  for (const auto& n : names) {
    if (match(n)) return true;
  }
  return false;
}

std::optional<ForeignFormat> ClassifyZip(const std::vector<std::string>& names) {
  bool torch = AnyName(names, [](const std::string& n) {
    return n == "data.pkl" || util::EndsWith(n, "/data.pkl") || util::StartsWith(n, "archive/");
  });
  bool script = AnyName(names, [](const std::string& n) {
    return n.find("/code/") != std::string::npos || util::EndsWith(n, "constants.pkl");
  });
  if (torch && script) {
    return ForeignFormat{
        "a TorchScript archive (torch.jit.save)",
        "export the module with torch.onnx.export(module, example_inputs, \"model.onnx\")"};
  }
  if (torch) {
    return ForeignFormat{"a PyTorch checkpoint (a torch.save zip archive)",
                         "load the model in PyTorch and export it with torch.onnx.export(model, "
                         "example_inputs, \"model.onnx\")"};
  }
  bool keras = AnyName(names, [](const std::string& n) { return n == "config.json"; }) &&
               AnyName(names, [](const std::string& n) { return n == "model.weights.h5"; });
  if (keras) {
    return ForeignFormat{"a Keras model archive (.keras)",
                         "convert it with tf2onnx (tf2onnx.convert.from_keras(model) after "
                         "keras.models.load_model)"};
  }
  return ForeignFormat{"a zip archive", "unpack it, or export the model to ONNX first"};
}

std::optional<ForeignFormat> SavedModel() {
  return ForeignFormat{
      "a TensorFlow SavedModel",
      "convert it with tf2onnx: python -m tf2onnx.convert --saved-model DIR --output model.onnx"};
}

}  // namespace

std::optional<ForeignFormat> DetectForeignFormat(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / "saved_model.pb", ec)) return SavedModel();
    return std::nullopt;
  }
  if (path.filename() == "saved_model.pb") return SavedModel();
  if (!fs::is_regular_file(path, ec)) return std::nullopt;  // never open a FIFO: it would block
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string head = ReadAt(in, 0, 8);
  if (head.size() >= 8 && std::string_view(head).substr(4, 4) == kTfliteId) {
    return ForeignFormat{"a TensorFlow Lite flatbuffer (TFL3)",
                         "convert it with tf2onnx (python -m tf2onnx.convert --tflite "
                         "model.tflite --output model.onnx) or tflite2onnx"};
  }
  if (head == kHdf5Magic) {
    return ForeignFormat{"an HDF5 file (a Keras .h5 model)",
                         "convert it with tf2onnx (tf2onnx.convert.from_keras(model) after "
                         "tf.keras.models.load_model)"};
  }
  if (head.size() >= 4 && std::string_view(head).substr(0, 4) == kZipMagic) {
    uint64_t size = fs::file_size(path, ec);
    if (ec) return std::nullopt;
    return ClassifyZip(ZipEntryNames(in, size));
  }
  return std::nullopt;
}

}  // namespace porttool::io
