#include "lib/io/foreign_format.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io::foreign_format_test {
namespace {

namespace fs = std::filesystem;
using porttool::testing::TempDir;
using porttool::testing::WriteFile;

std::string Le(uint32_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A zip archive of stored (uncompressed) entries, as torch.save and keras write them (CRCs are
// left 0: nothing here reads the data).
std::string Zip(const std::vector<std::string>& names) {
  std::string local, central;
  for (const auto& name : names) {
    uint32_t offset = static_cast<uint32_t>(local.size());
    const std::string data = "x";
    local += std::string("PK\x03\x04", 4) + Le(20, 2) + Le(0, 2) + Le(0, 2) + Le(0, 4) + Le(0, 4) +
             Le(1, 4) + Le(1, 4) + Le(name.size(), 2) + Le(0, 2) + name + data;
    central += std::string("PK\x01\x02", 4) + Le(20, 2) + Le(20, 2) + Le(0, 2) + Le(0, 2) +
               Le(0, 4) + Le(0, 4) + Le(1, 4) + Le(1, 4) + Le(name.size(), 2) + Le(0, 2) +
               Le(0, 2) + Le(0, 2) + Le(0, 2) + Le(0, 4) + Le(offset, 4) + name;
  }
  std::string end = std::string("PK\x05\x06", 4) + Le(0, 2) + Le(0, 2) + Le(names.size(), 2) +
                    Le(names.size(), 2) + Le(central.size(), 4) + Le(local.size(), 4) + Le(0, 2);
  return local + central + end;
}

// Load's message for `path`: it must be bad input naming the file.
std::string LoadError(const fs::path& path) {
  try {
    Load(path);
    ADD_FAILURE() << path << " loaded";
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    return e.what();
  }
}

TEST(ForeignFormat, EveryKnownFormatIsNamedWithItsExporter) {
  TempDir tmp;
  struct Case {
    std::string file, content, says, exporter;
  };
  const std::vector<Case> cases = {
      {"checkpoint.onnx", Zip({"archive/data.pkl", "archive/data/0", "archive/version"}),
       "a PyTorch checkpoint (a torch.save zip archive)", "torch.onnx.export"},
      {"resnet.pt", Zip({"resnet/data.pkl", "resnet/data/0"}),
       "a PyTorch checkpoint (a torch.save zip archive)", "torch.onnx.export"},
      {"scripted.onnx",
       Zip({"scripted/data.pkl", "scripted/code/__torch__.py", "scripted/constants.pkl"}),
       "a TorchScript archive (torch.jit.save)", "torch.onnx.export"},
      {"model.keras", Zip({"metadata.json", "config.json", "model.weights.h5"}),
       "a Keras model archive (.keras)", "tf2onnx"},
      {"model.onnx", std::string("\x1c\0\0\0TFL3", 8) + std::string(64, '\0'),
       "a TensorFlow Lite flatbuffer (TFL3)", "tflite"},
      {"weights.onnx", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(64, '\0'),
       "an HDF5 file (a Keras .h5 model)", "tf2onnx"},
      {"other.zip", Zip({"readme.txt"}), "a zip archive", "export the model to ONNX"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    WriteFile(tmp / c.file, c.content);
    std::string why = LoadError(tmp / c.file);
    EXPECT_NE(why.find(c.says + ", not an ONNX model"), std::string::npos) << why;
    EXPECT_NE(why.find(c.exporter), std::string::npos) << why;
  }
  fs::create_directories(tmp / "saved" / "variables");
  WriteFile(tmp / "saved" / "saved_model.pb", "\x08\x01");
  for (const fs::path& p : {tmp / "saved", tmp / "saved" / "saved_model.pb"}) {
    std::string why = LoadError(p);
    EXPECT_NE(why.find("a TensorFlow SavedModel, not an ONNX model"), std::string::npos) << why;
    EXPECT_NE(why.find("tf2onnx.convert --saved-model"), std::string::npos) << why;
  }
}

// Unknown bytes keep the plain message: the detector names only what it recognises.
TEST(ForeignFormat, AnythingElseIsNotGuessed) {
  TempDir tmp;
  WriteFile(tmp / "junk.onnx", "\xff\xff\xff\xff garbage");
  EXPECT_NE(LoadError(tmp / "junk.onnx").find("not a valid ONNX protobuf"), std::string::npos);
  EXPECT_FALSE(DetectForeignFormat(tmp / "junk.onnx"));
  fs::create_directories(tmp / "dir");
  EXPECT_NE(LoadError(tmp / "dir").find("is a directory, not a model file"), std::string::npos);
  // A truncated zip (no central directory) is still named a zip, not a PyTorch file.
  WriteFile(tmp / "cut.onnx", Zip({"archive/data.pkl"}).substr(0, 40));
  EXPECT_NE(LoadError(tmp / "cut.onnx").find("a zip archive"), std::string::npos);
}

}  // namespace
}  // namespace porttool::io::foreign_format_test
