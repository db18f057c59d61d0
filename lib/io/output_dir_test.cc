#include "lib/io/output_dir.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/io/staging_dir.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io::output_dir_test {
namespace {

namespace fs = std::filesystem;
using porttool::testing::ReadFile;
using porttool::testing::TempDir;
using porttool::testing::WriteFile;

// The message of the usage error CheckOutputDir throws; "" when it accepts the request.
std::string Refusal(const OutputDirRequest& request) {
  try {
    CheckOutputDir(request);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e.what();
  }
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void MakeOutput(const fs::path& dir, const std::string& format) {
  fs::create_directories(dir);
  WriteOutputMarker(dir, format);
  WriteFile(dir / "report.md", "an earlier output");
}

TEST(OutputDir, ReplacesOnlyADirectoryPorttoolWroteAndOnlyWhenAsked) {
  TempDir tmp;
  EXPECT_EQ(Refusal({tmp / "new"}), "");  // nothing there
  fs::create_directories(tmp / "empty");
  EXPECT_EQ(Refusal({tmp / "empty"}), "");  // nothing to lose
  fs::create_directories(tmp / "mine");
  WriteFile(tmp / "mine" / "notes.txt", "mine");
  for (bool replace : {false, true}) {
    std::string why = Refusal({tmp / "mine", {}, {}, replace});
    EXPECT_TRUE(Has(why, "porttool did not write it") && Has(why, kOutputMarker)) << why;
  }
  MakeOutput(tmp / "ours", "port-bundle");
  std::string why = Refusal({tmp / "ours"});
  EXPECT_TRUE(Has(why, "replace it (force)")) << why;
  EXPECT_EQ(Refusal({tmp / "ours", {}, {}, true}), "");
  WriteFile(tmp / "file", "x");
  EXPECT_TRUE(Has(Refusal({tmp / "file", {}, {}, true}), "is not a directory"));
  EXPECT_EQ(ReadFile(tmp / "mine" / "notes.txt"), "mine");
}

// A marker written by anything else (another tool's file of the same name) proves nothing.
TEST(OutputDir, OnlyPorttoolsMarkerCounts) {
  TempDir tmp;
  fs::create_directories(tmp / "d");
  WriteFile(tmp / "d" / kOutputMarker, "something else\n");
  EXPECT_FALSE(HasOutputMarker(tmp / "d"));
  EXPECT_TRUE(Has(Refusal({tmp / "d", {}, {}, true}), "porttool did not write it"));
  WriteOutputMarker(tmp / "d", "split");
  EXPECT_TRUE(HasOutputMarker(tmp / "d"));
  EXPECT_EQ(ReadFile(tmp / "d" / kOutputMarker), OutputMarkerText("split"));
  EXPECT_EQ(OutputMarkerText("split"), "porttool-output 1\nformat: split\n");
}

// A directory holding an input is never replaced, marked or not, asked or not: the user put
// their input there. The same for the input directory itself and its parents.
TEST(OutputDir, NeverADirectoryHoldingAnInput) {
  TempDir tmp;
  MakeOutput(tmp / "proj", "port-bundle");
  WriteFile(tmp / "proj" / "model.onnx", "model");
  fs::create_directories(tmp / "proj" / "samples");
  for (const fs::path& input : {tmp / "proj" / "model.onnx", tmp / "proj" / "samples"}) {
    std::string why = Refusal({tmp / "proj", {input}, {}, true});
    EXPECT_TRUE(Has(why, "holds '" + input.string() + "'") && Has(why, "an input of this run"))
        << why;
    // Its parent too, and a spelling through `..` or a symlink.
    EXPECT_NE(Refusal({tmp.path(), {input}, {}, true}), "");
    EXPECT_NE(Refusal({tmp / "proj" / "samples" / "..", {input}, {}, true}), "");
  }
  fs::create_directory_symlink(tmp / "proj", tmp / "link");
  EXPECT_NE(Refusal({tmp / "link", {tmp / "proj" / "model.onnx"}, {}, true}), "");
  EXPECT_NE(Refusal({tmp / "proj", {tmp / "link" / "model.onnx"}, {}, true}), "");
  // The input directory itself, even when it does not exist yet as an output.
  EXPECT_TRUE(
      Has(Refusal({tmp / "proj" / "samples", {tmp / "proj" / "samples"}, {}, true}), "' is '"));
  // A sibling is fine.
  MakeOutput(tmp / "out", "port-bundle");
  EXPECT_EQ(Refusal({tmp / "out", {tmp / "proj" / "model.onnx"}, {}, true}), "");
  EXPECT_EQ(ReadFile(tmp / "proj" / "model.onnx"), "model");
}

// A model's external data counts as an input: a model beside a marked directory whose weights
// live inside it keeps that directory.
TEST(OutputDir, AModelsExternalDataIsAnInput) {
  TempDir tmp;
  Model m = ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
tiny (float[2] x) => (float[2] y) { y = Add(x, w) })");
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(1.0f);
  w->add_float_data(2.0f);
  MakeOutput(tmp / "weights", "split");
  SaveOptions options;
  options.external_data = true;
  options.external_threshold = 0;
  options.external_file = "weights/w.bin";
  Save(m, tmp / "model.onnx", options);
  ASSERT_TRUE(fs::exists(tmp / "weights" / "w.bin"));
  std::string why = Refusal({tmp / "weights", {}, {tmp / "model.onnx"}, true});
  EXPECT_TRUE(Has(why, "w.bin")) << why;
  // Read only when it matters: a model that does not load is its own file alone.
  WriteFile(tmp / "broken.onnx", "not a model");
  EXPECT_EQ(Refusal({tmp / "weights", {}, {tmp / "broken.onnx"}, true}), "");
}

fs::path Stale(const fs::path& parent, const std::string& name, bool marked) {
  fs::path dir = parent / name;
  fs::create_directories(dir);
  if (marked) WriteOutputMarker(dir, "port-bundle");
  WriteFile(dir / "half.txt", "half");
  return dir;
}

// An interrupted run leaves its staging directory: the next run writing there removes it when
// it is provably porttool's (the name, the marker, no live lock) and leaves anything else.
TEST(OutputDir, StaleStagingIsClearedOnlyWhenProvablyPorttools) {
  TempDir tmp;
  fs::path dead = Stale(tmp.path(), ".b.tmp-Ab12Cd", true);
  fs::path unmarked = Stale(tmp.path(), ".b.tmp-Zz99Yy", false);
  fs::path other_name = Stale(tmp.path(), ".b.tmp-short", true);
  fs::path other_target = Stale(tmp.path(), ".c.tmp-Ab12Cd", true);
  fs::path live = Stale(tmp.path(), ".b.tmp-Qq77Rr", true);
  DirLock held(live);
  ASSERT_TRUE(held.held());
  EXPECT_EQ(ClearStaleStaging(tmp / "b"), std::vector<fs::path>{dead});
  EXPECT_FALSE(fs::exists(dead));
  for (const auto& kept : {unmarked, other_name, other_target, live}) {
    EXPECT_TRUE(fs::exists(kept / "half.txt")) << kept;
  }
}

// Killed between moving the previous output aside and moving the new one in: the previous output
// goes back to its name. Once a new output is in place, the swapped-out one is removed.
TEST(OutputDir, ASwappedOutPreviousOutputIsPutBack) {
  TempDir tmp;
  fs::path old = Stale(tmp.path(), ".b.old-Ab12Cd", true);
  EXPECT_EQ(Refusal({tmp / "b", {}, {}, false}).find("replace it (force)") != std::string::npos,
            true)
      << "the restored output is judged as the user's previous output";
  EXPECT_FALSE(fs::exists(old));
  EXPECT_EQ(ReadFile(tmp / "b" / "half.txt"), "half");
  fs::path second = Stale(tmp.path(), ".b.old-Ef34Gh", true);
  EXPECT_EQ(ClearStaleStaging(tmp / "b"), std::vector<fs::path>{second});
  EXPECT_FALSE(fs::exists(second));
  EXPECT_EQ(ReadFile(tmp / "b" / "half.txt"), "half");
}

TEST(OutputDir, StagingDirIsMarkedLockedAndKeptUnderAnotherName) {
  TempDir tmp;
  fs::path kept;
  {
    StagingDir staging(tmp / "b", "port-bundle");
    EXPECT_EQ(ReadFile(staging.path() / kOutputMarker), OutputMarkerText("port-bundle"));
    EXPECT_FALSE(DirLock::TryLock(staging.path()).held()) << "a live run's directory is locked";
    EXPECT_TRUE(ClearStaleStaging(tmp / "b").empty());
    kept = staging.Keep();
  }
  EXPECT_TRUE(kept.filename().string().rfind(".b.kept-", 0) == 0) << kept;
  EXPECT_TRUE(ClearStaleStaging(tmp / "b").empty()) << "a kept attempt is the user's to inspect";
  EXPECT_TRUE(fs::exists(kept / kOutputMarker));
  {
    StagingDir staging(tmp / "b", "split");
    staging.Commit();
  }
  EXPECT_EQ(ReadFile(tmp / "b" / kOutputMarker), OutputMarkerText("split"));
}

}  // namespace
}  // namespace porttool::io::output_dir_test
