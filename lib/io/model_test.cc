#include "lib/io/model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "lib/io/atomic_file.h"
#include "lib/io/external_data.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

using porttool::testing::TempDir;

constexpr const char* kTinyAdd2 = R"(
<ir_version: 8, opset_import: ["" : 14]>
tiny (float[2] x) => (float[2] y) {
  y = Add(x, w)
}
)";

// A tiny model whose initializer `w` lives in `w.bin` next to `dir/model.onnx`.
Model ExternalModel(const TempDir& dir, const std::vector<float>& values) {
  Model m = ParseText(kTinyAdd2);
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(static_cast<int64_t>(values.size()));
  std::string bytes(8, 'P');  // padding so the offset matters
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  porttool::testing::WriteFile(dir / "w.bin", bytes);
  SetExternalRef(*w, "w.bin", 8, values.size() * sizeof(float));
  m.base_dir = dir.path();
  return m;
}

std::vector<float> AsFloats(const TensorBytes& b) {
  std::vector<float> out(b.bytes.size() / sizeof(float));
  std::memcpy(out.data(), b.bytes.data(), b.bytes.size());
  return out;
}

TEST(ModelIo, LoadsBundledDemo) {
  Model m = Load(porttool::testing::TestData("demo_detector.onnx"));
  EXPECT_GT(m.proto.graph().node_size(), 10);
  EXPECT_EQ(m.proto.graph().input(0).name(), "images");
  EXPECT_FALSE(m.base_dir.empty());
}

TEST(ModelIo, ReadsRawTypedAndExternalTensors) {
  TempDir dir;
  Model m = ExternalModel(dir, {1.5f, -2.0f});
  EXPECT_EQ(AsFloats(ReadTensorBytes(m, m.proto.graph().initializer(0))),
            (std::vector<float>{1.5f, -2.0f}));
  onnx::TensorProto typed;
  typed.set_name("typed");
  typed.set_data_type(onnx::TensorProto::FLOAT);
  typed.add_float_data(3.0f);
  EXPECT_EQ(AsFloats(ReadTensorBytes(m, typed)), std::vector<float>{3.0f});
  onnx::TensorProto raw = typed;
  raw.clear_float_data();
  float v = 4.0f;
  raw.set_raw_data(&v, sizeof v);
  EXPECT_EQ(AsFloats(ReadTensorBytes(m, raw)), std::vector<float>{4.0f});
}

TEST(ModelIo, PayloadBytesOfExternalTensorComesFromLength) {
  onnx::TensorProto t;
  t.set_name("big");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1000);
  SetExternalRef(t, "nowhere.bin", 0, 4000);
  EXPECT_EQ(TensorPayloadBytes(t), 4000u);  // no file needed
}

TEST(ModelIo, SaveAndReloadKeepsExternalDataByReference) {
  TempDir dir;
  Model m = ExternalModel(dir, {1.0f, 2.0f});
  porttool::testing::WriteFile(dir / "model.onnx", m.proto.SerializeAsString());
  Model loaded = Load(dir / "model.onnx");
  std::filesystem::create_directory(dir / "out");
  SaveResult r = Save(loaded, dir / "out" / "copy.onnx");
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "w.bin"));
  Model again = Load(dir / "out" / "copy.onnx");
  EXPECT_TRUE(IsExternal(again.proto.graph().initializer(0)));
  EXPECT_EQ(AsFloats(ReadTensorBytes(again, again.proto.graph().initializer(0))),
            (std::vector<float>{1.0f, 2.0f}));
}

TEST(ModelIo, SaveWithExternalDataWritesOneDataFile) {
  TempDir dir;
  Model m = ParseText(kTinyAdd2);
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(7.0f);
  w->add_float_data(8.0f);
  SaveOptions options;
  options.external_data = true;
  options.external_threshold = 0;
  Save(m, dir / "ext.onnx", options);
  EXPECT_TRUE(std::filesystem::exists(dir / "ext.onnx.data"));
  EXPECT_FALSE(IsExternal(m.proto.graph().initializer(0))) << "the in-memory model is restored";
  Model loaded = Load(dir / "ext.onnx");
  EXPECT_TRUE(IsExternal(loaded.proto.graph().initializer(0)));
  EXPECT_EQ(AsFloats(ReadTensorBytes(loaded, loaded.proto.graph().initializer(0))),
            (std::vector<float>{7.0f, 8.0f}));
}

TEST(ModelIo, SaveRefusesToOverwriteTheInputUnlessInPlace) {
  TempDir dir;
  porttool::testing::WriteFile(dir / "m.onnx", ParseText(kTinyAdd2).proto.SerializeAsString());
  Model m = Load(dir / "m.onnx");
  try {
    Save(m, dir / "m.onnx");
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("refusing to overwrite"), std::string::npos);
  }
  SaveOptions in_place;
  in_place.in_place = true;
  EXPECT_NO_THROW(Save(m, dir / "m.onnx", in_place));
}

TEST(ModelIo, FailedSaveLeavesNoFile) {
  TempDir dir;
  Model m = ParseText(kTinyAdd2);
  EXPECT_THROW(Save(m, dir / "missing_dir" / "out.onnx"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "missing_dir" / "out.onnx"));
}

// The model file and its data file are one output: a failure on either rename leaves neither
// (or both previous versions, byte for byte), and no temp file.
TEST(ModelIo, SaveCommitsTheModelAndItsDataFileTogether) {
  namespace fs = std::filesystem;
  auto listing = [](const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      out[e.path().filename().string()] = porttool::testing::ReadFile(e.path());
    }
    return out;
  };
  SaveOptions options;
  options.external_data = true;
  options.external_threshold = 0;
  for (bool previous : {false, true}) {
    for (int fail_at : {1, 2}) {
      SCOPED_TRACE(fmt::format("previous={} fail_at={}", previous, fail_at));
      TempDir dir;
      Model m = ExternalModel(dir, {1.0f, 2.0f});
      fs::create_directory(dir / "out");
      if (previous) {
        porttool::testing::WriteFile(dir / "out" / "m.onnx", "old model");
        porttool::testing::WriteFile(dir / "out" / "m.onnx.data", "old data");
      }
      auto before = listing(dir / "out");
      SetRenameFaultForTesting(fail_at);
      EXPECT_THROW(Save(m, dir / "out" / "m.onnx", options), Error);
      SetRenameFaultForTesting(0);
      EXPECT_EQ(listing(dir / "out"), before);
    }
  }
  // Kept by reference in another directory: the hard-linked data file goes with the model.
  TempDir dir;
  Model m = ExternalModel(dir, {1.0f, 2.0f});
  fs::create_directory(dir / "out");
  SetRenameFaultForTesting(2);
  EXPECT_THROW(Save(m, dir / "out" / "copy.onnx"), Error);
  SetRenameFaultForTesting(0);
  EXPECT_TRUE(fs::is_empty(dir / "out"));
  Save(m, dir / "out" / "copy.onnx");
  EXPECT_TRUE(fs::equivalent(dir / "out" / "w.bin", dir / "w.bin"));
}

}  // namespace
}  // namespace porttool::io
