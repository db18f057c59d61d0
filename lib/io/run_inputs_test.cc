#include "lib/io/run_inputs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "lib/io/atomic_file.h"
#include "lib/io/input_file.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class RunInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    TrackRunInputs();
    fs::create_directories(dir_ / "d" / "sub");
    testing::WriteFile(dir_ / "d" / "sub" / "m.onnx", "model bytes");
    NoteInput(dir_ / "d" / "sub" / "m.onnx");
  }
  void TearDown() override { ForgetInputsForTesting(); }
  TempDir dir_;
};

TEST_F(RunInputs, AnInputIsFoundUnderEverySpelling) {
  fs::create_hard_link(dir_ / "d" / "sub" / "m.onnx", dir_ / "hard.onnx");
  fs::create_symlink(dir_ / "d" / "sub" / "m.onnx", dir_ / "link.onnx");
  for (fs::path p : {dir_ / "d" / "sub" / "m.onnx", dir_ / "d" / "sub" / ".." / "sub" / "m.onnx",
                     dir_ / "hard.onnx", dir_ / "link.onnx"}) {
    auto hit = InputAt(p);
    ASSERT_TRUE(hit) << p;
    EXPECT_FALSE(hit->inside);
    EXPECT_THROW(GuardOutput(p), OutputError) << p;
  }
  EXPECT_FALSE(InputAt(dir_ / "other.onnx"));
  testing::WriteFile(dir_ / "other.onnx", "x");
  EXPECT_FALSE(InputAt(dir_ / "other.onnx"));
}

TEST_F(RunInputs, AFolderHoldingAnInputAtAnyDepthIsFound) {
  fs::create_directory_symlink(dir_ / "d", dir_ / "dlink");
  for (fs::path p : {dir_ / "d", dir_ / "d" / "sub", dir_.path(), dir_ / "dlink"}) {
    auto hit = InputAt(p);
    ASSERT_TRUE(hit) << p;
    EXPECT_TRUE(hit->inside) << p;
  }
  fs::create_directories(dir_ / "e");
  EXPECT_FALSE(InputAt(dir_ / "e"));
}

TEST_F(RunInputs, TheRefusalIsAUsageErrorNamingBoth) {
  try {
    GuardOutput(dir_ / "d" / "sub" / "m.onnx");
    FAIL() << "not refused";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("m.onnx"), std::string::npos);
  }
}

TEST_F(RunInputs, InPlaceAndAFileReplacedByItselfAreAllowed) {
  fs::path m = dir_ / "d" / "sub" / "m.onnx";
  fs::create_hard_link(m, dir_ / "same");
  EXPECT_NO_THROW(GuardOutput(m, dir_ / "same"));  // a hard link of the same data: no change
  AllowReplacingInput(m);
  EXPECT_NO_THROW(GuardOutput(m));
}

TEST_F(RunInputs, CommitAllRefusesToReplaceAnInputAndWritesNothing) {
  testing::WriteFile(dir_ / "out.json", "old");
  OutputSet outputs;
  outputs.Add(dir_ / "out.json").Write("new");
  outputs.Add(dir_ / "d" / "sub" / "m.onnx").Write("a table");
  EXPECT_THROW(outputs.Commit(), OutputError);
  EXPECT_EQ(testing::ReadFile(dir_ / "out.json"), "old");
  EXPECT_EQ(testing::ReadFile(dir_ / "d" / "sub" / "m.onnx"), "model bytes");
}

TEST_F(RunInputs, ReadingAFileNotesIt) {
  testing::WriteFile(dir_ / "t.json", "{}");
  EXPECT_FALSE(InputAt(dir_ / "t.json"));
  EXPECT_EQ(ReadInputFile(dir_ / "t.json", "table"), "{}");
  EXPECT_TRUE(InputAt(dir_ / "t.json"));
}

TEST(InputFile, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "x.npy").c_str(), 0644), 0);
  try {
    ReadInputFile(dir / "x.npy", "tensor file");
    FAIL() << "a FIFO was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("a FIFO"), std::string::npos) << e.what();
  }
}

TEST(InputFile, AFolderListingClassifiesLoopsFifosAndLinks) {
  TempDir dir;
  testing::WriteFile(dir / "a.npy", "x");
  fs::create_directory(dir / "sub");
  ASSERT_EQ(::mkfifo((dir / "f.npy").c_str(), 0644), 0);
  fs::create_symlink("loop1", dir / "loop2");
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("a.npy", dir / "b.npy");
  fs::create_directory_symlink(dir.path(), dir / "self");
  FolderListing l = ListInputFolder(dir.path(), "samples");
  ASSERT_EQ(l.files.size(), 2u);
  EXPECT_EQ(l.files[0].filename(), "a.npy");
  EXPECT_EQ(l.files[1].filename(), "b.npy");
  ASSERT_EQ(l.folders.size(), 2u);  // sub, and self (a link to a folder; nothing recurses)
  ASSERT_EQ(l.skipped.size(), 3u);
  EXPECT_EQ(l.skipped[0].path.filename(), "f.npy");
  EXPECT_EQ(l.skipped[0].why, "a FIFO");
  EXPECT_EQ(l.skipped[1].path.filename(), "loop1");
  EXPECT_THROW(ListInputFolder(dir / "a.npy", "samples"), Error);
  EXPECT_THROW(ListInputFolder(dir / "missing", "samples"), Error);
}

}  // namespace
}  // namespace porttool::io
