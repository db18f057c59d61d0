#include "lib/emit/split_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "lib/io/external_data.h"
#include "lib/shape/infer.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using ir::SplitResult;

// Split as the CLI calls it: with shape inference handed in.
SplitResult SplitAt(const io::Model& m, const std::vector<std::string>& names) {
  ir::SplitOptions options;
  options.infer_types = shape::TypeInference();
  return ir::SplitAtNodes(m, names, options);
}

const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "test">
chain (float[1,4] x) => (float[1,4] y) {
  a = Relu(x)
  b = Neg(a)
  c = Abs(b)
  d = Sigmoid(c)
  y = Tanh(d)
}
)";

TEST(SplitWriter, ManifestListsSegmentsBridgesAndOutputs) {
  io::Model m = testing::ParseNamed(kChain);
  SplitResult r = SplitAt(m, {"n_b"});
  nlohmann::json doc = PipelineManifest(r, m, "abc", "zero-copy");
  ASSERT_EQ(doc["segments"].size(), 3u);
  EXPECT_EQ(doc["segments"][1]["role"], "host");
  EXPECT_EQ(doc["segments"][1]["host_nodes"][0], "n_b");
  EXPECT_EQ(doc["segments"][1]["inputs"][0]["name"], "a");
  EXPECT_EQ(doc["segments"][1]["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(doc["segments"][1]["inputs"][0]["shape"], nlohmann::json::array({1, 4}));
  EXPECT_EQ(doc["segments"][1]["inputs"][0]["bytes"], 16);
  EXPECT_EQ(doc["bridges"][0]["tensor"], "a");
  EXPECT_EQ(doc["bridges"][0]["consumers"], nlohmann::json::array({1}));
  EXPECT_EQ(doc["graph_outputs"]["y"], 2);
}

// ---- writing ----

struct ExternalModel {
  testing::TempDir dir;
  fs::path path;
  io::Model model;
};

// A chain whose two weights live in an external data file.
std::unique_ptr<ExternalModel> MakeExternalModel() {
  auto out = std::make_unique<ExternalModel>();
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[256] x) => (float[256] y)
<float[256] w1 = {1.0}, float[256] w2 = {2.0}>
{
  a = Add(x, w1)
  b = Neg(a)
  y = Mul(b, w2)
}
)");
  for (auto& t : *m.proto.mutable_graph()->mutable_initializer()) {
    float v = t.float_data(0);
    t.clear_float_data();
    for (int i = 0; i < 256; ++i) t.add_float_data(v);
  }
  fs::create_directories(out->dir / "src");
  out->path = out->dir / "src" / "model.onnx";
  io::SaveOptions options;
  options.external_data = true;
  options.external_file = "model.data";
  io::Save(m, out->path, options);
  out->model = io::Load(out->path);
  return out;
}

TEST(SplitWriter, ZeroCopyHardLinksTheDataFileAndLeavesTheInputUntouched) {
  auto src = MakeExternalModel();
  std::string before = util::Sha256File(src->dir / "src" / "model.data");
  SplitResult r = SplitAt(src->model, {"n_b"});
  fs::path out = src->dir / "out.split";
  WriteSplitResult w = WriteSplit(r, src->model, out);
  EXPECT_TRUE(w.notes.empty());
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat((src->dir / "src" / "model.data").c_str(), &a), 0);
  ASSERT_EQ(::stat((out / "model.data").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(util::Sha256File(src->dir / "src" / "model.data"), before);
  for (const auto& file : {"00_accelerator.onnx", "01_host.onnx", "02_accelerator.onnx"}) {
    io::Model seg = io::Load(out / file);  // Load validates every location
    io::ForEachTensor(seg.proto.graph(), [&](const onnx::TensorProto& t) {
      ASSERT_TRUE(io::IsExternal(t));
      EXPECT_EQ(io::ParseExternalRef(t).location, "model.data");
    });
  }
  nlohmann::json doc = nlohmann::json::parse(testing::ReadFile(out / "pipeline.json"));
  EXPECT_EQ(doc["weights"], "zero-copy");
  EXPECT_EQ(doc["source"]["sha256"], util::Sha256File(src->path));
  // No temp directories are left beside the output.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(src->dir.path())) ++entries;
  EXPECT_EQ(entries, 2);  // src/ and out.split/
}

TEST(SplitWriter, CopyWeightsWritesSelfContainedSegmentsWithOnlyTheirWeights) {
  auto src = MakeExternalModel();
  SplitResult r = SplitAt(src->model, {"n_b"});
  fs::path out = src->dir / "copy.split";
  WriteSplit(r, src->model, out, {.copy_weights = true});
  EXPECT_FALSE(fs::exists(out / "model.data"));
  io::Model first = io::Load(out / "00_accelerator.onnx");
  ASSERT_EQ(first.proto.graph().initializer_size(), 1);
  const auto& w1 = first.proto.graph().initializer(0);
  EXPECT_FALSE(io::IsExternal(w1));
  io::TensorBytes bytes = io::ReadTensorBytes(first, w1);
  ASSERT_EQ(bytes.bytes.size(), 1024u);
  EXPECT_EQ(reinterpret_cast<const float*>(bytes.bytes.data())[255], 1.0f);
  nlohmann::json doc = nlohmann::json::parse(testing::ReadFile(out / "pipeline.json"));
  EXPECT_EQ(doc["weights"], "copy");
}

TEST(SplitWriter, ReplacesAPreviousSplitButNothingElse) {
  auto src = MakeExternalModel();
  SplitResult r = SplitAt(src->model, {"n_b"});
  fs::path out = src->dir / "out.split";
  WriteSplit(r, src->model, out);
  SplitResult again = SplitAt(src->model, {"n_a"});
  EXPECT_THROW(WriteSplit(again, src->model, out), Error);  // not asked to replace it
  WriteSplit(again, src->model, out, {.replace = true});
  EXPECT_FALSE(fs::exists(out / "02_accelerator.onnx"));  // the old third segment is gone
  EXPECT_TRUE(fs::exists(out / "01_accelerator.onnx"));
  fs::create_directories(src->dir / "other");
  testing::WriteFile(src->dir / "other" / "keep.txt", "x");
  EXPECT_THROW(WriteSplit(again, src->model, src->dir / "other", {.replace = true}), Error);
  EXPECT_TRUE(fs::exists(src->dir / "other" / "keep.txt"));
  EXPECT_THROW(WriteSplit(again, src->model, src->dir / "src", {.replace = true}),
               Error);  // holds the input
}

TEST(SplitWriter, DimLabelThatIsNotUtf8IsWrittenReplaced) {
  io::Model m = testing::ParseNamed(kChain);
  auto* dims = m.proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
  dims->mutable_shape()->mutable_dim(0)->set_dim_param("d\xCF");
  SplitResult r = SplitAt(m, {"n_b"});
  testing::TempDir dir;
  WriteSplit(r, m, dir / "s");
  auto doc = nlohmann::json::parse(testing::ReadFile(dir / "s" / "pipeline.json"));
  EXPECT_EQ(doc["segments"][0]["inputs"][0]["shape"][0], "d\xEF\xBF\xBD");
}

TEST(SplitWriter, AnnotationsBecomeTopLevelManifestFields) {
  io::Model m = testing::ParseNamed(kChain);
  SplitResult r = SplitAt(m, {"n_b"});
  nlohmann::json doc = PipelineManifest(r, m, "abc", "zero-copy", {{"estimate", {{"ms", 1.5}}}});
  EXPECT_EQ(doc["estimate"]["ms"], 1.5);
  EXPECT_EQ(doc["format"], "porttool-pipeline/1");
}

}  // namespace
}  // namespace porttool::emit
