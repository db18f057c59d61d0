// `porttool emit-header` end to end: exit codes, JSON, a golden header for the bundled demo,
// weight blobs checked against python onnx's own reading of the initializers, no output left
// behind on errors, and the PP-OCRv4 arena figures (skipped without shared models).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

// The lines that depend on where and how porttool ran (and on the demo's exact bytes), blanked
// so the golden file stays comparable.
std::string Normalise(const std::string& header) {
  std::istringstream in(header);
  std::string line, out;
  while (std::getline(in, line)) {
    for (const char* key : {" * command:", " * porttool:", " * sha256:"}) {
      if (line.rfind(key, 0) == 0) line = std::string(key) + " <normalised>";
    }
    out += line + "\n";
  }
  return out;
}

TEST(CliEmitHeaderTest, GoldenHeaderForTheDemo) {
  TempDir dir;
  auto r = RunPorttool(fmt::format(
      "emit-header {} -o {}/demo_detector.h --input-shape images:1x3x64x64 --arena --weights "
      "{}/demo_detector_weights.bin",
      testing::DemoArg(), dir.path().string(), dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string got = testing::ReadFile(dir / "demo_detector.h");
  fs::path golden = testing::TestData("golden/demo_detector.h");
  if (std::getenv("PORTTOOL_UPDATE_GOLDEN") != nullptr) testing::WriteFile(golden, got);
  EXPECT_EQ(Normalise(got), Normalise(testing::ReadFile(golden)))
      << "regenerate with PORTTOOL_UPDATE_GOLDEN=1 after reviewing the difference";
  auto compile = testing::RunShell(fmt::format(
      "gcc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c {0}/demo_detector.h && "
      "g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ {0}/demo_detector.h",
      dir.path().string()));
  EXPECT_EQ(compile.exit_code, 0) << compile.err;
}

TEST(CliEmitHeaderTest, JsonHasTheDocumentedKeys) {
  TempDir dir;
  auto r =
      RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x32x48 "
                              "--align 128 --arena --json",
                              testing::DemoArg(), dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["buffers"].size(), 2u);
  const auto& in = doc["buffers"][0];
  EXPECT_EQ(in["name"], "images");
  EXPECT_EQ(in["c_name"], "images");
  EXPECT_EQ(in["dtype"], "float32");
  EXPECT_EQ(in["shape"], nlohmann::json({1, 3, 32, 48}));
  EXPECT_EQ(in["bytes"], 3 * 32 * 48 * 4);
  EXPECT_EQ(in["aligned_bytes"], 3 * 32 * 48 * 4);  // already a multiple of 128
  const auto& out = doc["buffers"][1];
  EXPECT_EQ(out["name"], "score");
  EXPECT_EQ(out["shape"], nlohmann::json({1, 1, 16, 24}));
  EXPECT_EQ(out["bytes"], 16 * 24 * 4);
  EXPECT_EQ(out["aligned_bytes"], 1536);  // 1536 = 12 x 128
  const auto& arena = doc["arena"];
  for (const char* key : {"size_bytes", "naive_bytes", "lower_bound_bytes", "tensors"}) {
    EXPECT_TRUE(arena.contains(key)) << key;
  }
  EXPECT_GE(arena["size_bytes"], arena["lower_bound_bytes"]);
  EXPECT_LE(arena["size_bytes"], arena["naive_bytes"]);
  for (const auto& t : arena["tensors"]) {
    for (const char* key : {"name", "offset", "bytes", "first_use", "last_use"}) {
      EXPECT_TRUE(t.contains(key)) << key;
    }
    EXPECT_EQ(t["offset"].get<uint64_t>() % 128, 0u);
  }
  EXPECT_FALSE(doc.contains("weights"));
}

TEST(CliEmitHeaderTest, NoArenaKeyWithoutArena) {
  TempDir dir;
  auto r = RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x8x8 --json",
                                   testing::DemoArg(), dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("arena"));
}

// python onnx reads every initializer itself; the blob must hold exactly those bytes.
TEST(CliEmitHeaderTest, WeightBlobMatchesPythonOnnx) {
  TempDir dir;
  auto r =
      RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x8x8 "
                              "--weights {}/w.bin --align 256 --json",
                              testing::DemoArg(), dir.path().string(), dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::WriteFile(dir / "layout.json", r.out);
  testing::WriteFile(dir / "check.py", R"(
import json, sys
import onnx
from onnx import numpy_helper
model, blob_path, layout_path = sys.argv[1:4]
m = onnx.load(model)
blob = open(blob_path, "rb").read()
layout = json.load(open(layout_path))["weights"]
assert len(blob) == layout["size_bytes"], (len(blob), layout["size_bytes"])
assert len(layout["tensors"]) == len(m.graph.initializer)
by_name = {t["name"]: t for t in layout["tensors"]}
for init in m.graph.initializer:
    data = numpy_helper.to_array(init).tobytes()
    t = by_name[init.name]
    assert t["offset"] % 256 == 0, init.name
    assert blob[t["offset"]:t["offset"] + t["bytes"]] == data, init.name
print("ok", len(m.graph.initializer))
)");
  auto check = testing::RunShell(fmt::format(
      "{} {}/check.py {} {}/w.bin {}/layout.json", testing::kSystemPython, dir.path().string(),
      testing::DemoArg(), dir.path().string(), dir.path().string()));
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
}

TEST(CliEmitHeaderTest, BadAlignmentIsAUsageError) {
  TempDir dir;
  for (const char* align : {"48", "0", "8192", "-64", "abc"}) {
    auto r =
        RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x8x8 "
                                "--align {}",
                                testing::DemoArg(), dir.path().string(), align));
    EXPECT_EQ(r.exit_code, 2) << align << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir / "d.h"));
  }
  auto ok =
      RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x8x8 "
                              "--align 4096",
                              testing::DemoArg(), dir.path().string()));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(CliEmitHeaderTest, DynamicDimsNeedInputShape) {
  TempDir dir;
  auto r =
      RunPorttool(fmt::format("emit-header {} -o {}/d.h", testing::DemoArg(), dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("images"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--input-shape images:1x3x640x640"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "d.h"));
}

// With every input pinned, an arena that cannot be planned names the node that blocks inference
// (and why the executor could not measure it) instead of asking for --input-shape again.
TEST(CliEmitHeaderTest, PinnedInputsBlockedInferenceNamesTheNode) {
  TempDir dir;
  testing::WriteFile(dir / "make.py", R"(
import onnx, sys
from onnx import helper, TensorProto
nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"),
         helper.make_node("Mystery", ["a"], ["b"], name="mystery_0", domain="acme"),
         helper.make_node("Relu", ["b"], ["y"], name="r2")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("acme", 1)])
onnx.save(m, sys.argv[1])
)");
  auto model = (dir / "custom.onnx").string();
  ASSERT_EQ(testing::RunShell(std::string(testing::kSystemPython) + " " +
                              (dir / "make.py").string() + " " + model)
                .exit_code,
            0);
  auto r = RunPorttool(fmt::format("emit-header {} -o {}/d.h --arena", model, dir.path().string()));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("node 'mystery_0' (Mystery)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pin dynamic inputs"), std::string::npos) << r.err;
  auto c = RunPorttool("check " + model + " --target rknn-rk3588 --json");
  auto doc = nlohmann::json::parse(c.out);
  std::string notes = doc["target"]["memory"]["notes"].dump();
  EXPECT_NE(notes.find("mystery_0"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("--input-shape"), std::string::npos) << notes;
}

TEST(CliEmitHeaderTest, OtherUsageAndInputErrors) {
  TempDir dir;
  std::string base =
      fmt::format("emit-header {} --input-shape images:1x3x8x8 ", testing::DemoArg());
  EXPECT_EQ(RunPorttool(base).exit_code, 2);  // no -o
  EXPECT_EQ(RunPorttool(base + "-o " + (dir / "d.h").string() + " --weights w.txt").exit_code, 2);
  EXPECT_EQ(RunPorttool(base + "-o " + (dir / "d.h").string() + " --prefix 1x").exit_code, 2);
  EXPECT_EQ(RunPorttool(base + "-o " + testing::DemoArg()).exit_code,
            2);  // would overwrite the model
  testing::WriteFile(dir / "junk.onnx", "not a model");
  auto junk = RunPorttool(
      fmt::format("emit-header {}/junk.onnx -o {}/j.h", dir.path().string(), dir.path().string()));
  EXPECT_EQ(junk.exit_code, 3) << junk.err;
  EXPECT_FALSE(fs::exists(dir / "j.h"));
  EXPECT_FALSE(fs::exists(dir / "d.h"));
}

TEST(CliEmitHeaderTest, InputModelIsUntouched) {
  TempDir dir;
  std::string before = util::Sha256File(testing::DemoModelPath());
  auto r =
      RunPorttool(fmt::format("emit-header {} -o {}/d.h --input-shape images:1x3x8x8 --arena "
                              "--weights {}/w.c",
                              testing::DemoArg(), dir.path().string(), dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(util::Sha256File(testing::DemoModelPath()), before);
  EXPECT_NE(testing::ReadFile(dir / "d.h").find("sha256:    " + before), std::string::npos);
  auto compile = testing::RunShell(fmt::format(
      "cd {} && gcc -std=c99 -Wall -Wextra -Werror -pedantic -c w.c -o w.o", dir.path().string()));
  EXPECT_EQ(compile.exit_code, 0) << compile.err;
}

// The closing-note figures, end to end through the CLI.
TEST(CliEmitHeaderTest, PpOcrArenaFigures) {
  auto models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("shared models absent (../shared/models)");
  TempDir dir;
  for (auto [file, shape] : std::vector<std::pair<std::string, std::string>>{
           {"ch_PP-OCRv4_det_infer.onnx", "x:1x3x640x640"},
           {"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x:1x3x48x192"}}) {
    auto r = RunPorttool(fmt::format("emit-header {} -o {}/m.h --input-shape {} --arena --json",
                                     (models / file).string(), dir.path().string(), shape));
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.err;
    auto arena = nlohmann::json::parse(r.out)["arena"];
    uint64_t size = arena["size_bytes"], naive = arena["naive_bytes"],
             bound = arena["lower_bound_bytes"];
    std::printf("%s %s: arena %llu, naive %llu, lower bound %llu (arena/bound %.4f)\n",
                file.c_str(), shape.c_str(), (unsigned long long)size, (unsigned long long)naive,
                (unsigned long long)bound, double(size) / bound);
    EXPECT_LE(size, bound * 1.10) << file;
  }
}

}  // namespace
}  // namespace porttool
