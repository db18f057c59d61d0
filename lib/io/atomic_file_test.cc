#include "lib/io/atomic_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

namespace fs = std::filesystem;
using porttool::testing::ReadFile;
using porttool::testing::TempDir;
using porttool::testing::WriteFile;

// Every entry of `dir` (temp and kept files included) with its content.
std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out[e.path().filename().string()] = ReadFile(e.path());
  }
  return out;
}

// Fails the nth rename from here on, and turns the hook off at the end of the test.
class FailRenameAt {
 public:
  explicit FailRenameAt(int nth) { SetRenameFaultForTesting(nth); }
  ~FailRenameAt() { SetRenameFaultForTesting(0); }
};

// Writes a, b, c into `dir` (a and c in a sub-directory: targets in different places) and commits
// them with the nth rename failing.
void CommitThree(const fs::path& dir, int fail_at) {
  AtomicFile a(dir / "sub" / "a.txt"), b(dir / "b.txt"), c(dir / "sub" / "c.txt");
  a.Write("new a");
  b.Write("new b");
  c.Write("new c");
  FailRenameAt fault(fail_at);
  CommitAll({&a, &b, &c});
}

TEST(CommitAll, WritesEveryFileAndLeavesNothingElse) {
  TempDir dir;
  fs::create_directory(dir / "sub");
  WriteFile(dir / "b.txt", "old b");
  CommitThree(dir.path(), 0);
  EXPECT_EQ(Snapshot(dir.path()),
            (std::map<std::string, std::string>{{"b.txt", "new b"}, {"sub", ""}}));
  EXPECT_EQ(Snapshot(dir / "sub"),
            (std::map<std::string, std::string>{{"a.txt", "new a"}, {"c.txt", "new c"}}));
}

TEST(CommitAll, AFailedRenameLeavesNoTargetWhenThereWereNone) {
  for (int fail_at : {1, 2, 3}) {
    SCOPED_TRACE(fail_at);
    TempDir dir;
    fs::create_directory(dir / "sub");
    try {
      CommitThree(dir.path(), fail_at);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("no output was written or changed"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(Snapshot(dir.path()), (std::map<std::string, std::string>{{"sub", ""}}));
    EXPECT_TRUE(Snapshot(dir / "sub").empty());
  }
}

TEST(CommitAll, AFailedRenamePutsEveryPreviousFileBack) {
  // All three targets exist, then only the first and the last (the second is new).
  for (bool all_exist : {true, false}) {
    for (int fail_at : {2, 3}) {
      SCOPED_TRACE(fmt::format("all_exist={} fail_at={}", all_exist, fail_at));
      TempDir dir;
      fs::create_directory(dir / "sub");
      WriteFile(dir / "sub" / "a.txt", "old a");
      if (all_exist) WriteFile(dir / "b.txt", "old b");
      WriteFile(dir / "sub" / "c.txt", "old c");
      auto top = Snapshot(dir.path()), sub = Snapshot(dir / "sub");
      EXPECT_THROW(CommitThree(dir.path(), fail_at), Error);
      EXPECT_EQ(Snapshot(dir.path()), top);
      EXPECT_EQ(Snapshot(dir / "sub"), sub);
    }
  }
}

TEST(CommitAll, OneFileThatFailsKeepsThePreviousOne) {
  TempDir dir;
  WriteFile(dir / "x.txt", "old");
  {
    AtomicFile x(dir / "x.txt");
    x.Write("new");
    FailRenameAt fault(1);
    EXPECT_THROW(x.Commit(), Error);
  }
  EXPECT_EQ(Snapshot(dir.path()), (std::map<std::string, std::string>{{"x.txt", "old"}}));
}

TEST(CommitAll, OutputSetCommitsALinkedFileWithTheOthers) {
  TempDir dir;
  fs::create_directory(dir / "out");
  WriteFile(dir / "weights.bin", "weights");
  for (int fail_at : {1, 2, 0}) {
    SCOPED_TRACE(fail_at);
    {
      OutputSet outputs;
      outputs.Add(dir / "out" / "model.txt").Write("model");
      EXPECT_FALSE(outputs.Add(dir / "out" / "weights.bin").LinkOrCopyFrom(dir / "weights.bin"));
      FailRenameAt fault(fail_at);
      if (fail_at == 0) {
        outputs.Commit();
      } else {
        EXPECT_THROW(outputs.Commit(), Error);
      }
    }  // an uncommitted set removes its temp files
    if (fail_at != 0) {
      EXPECT_TRUE(Snapshot(dir / "out").empty());
    }
  }
  EXPECT_EQ(Snapshot(dir / "out"), (std::map<std::string, std::string>{
                                       {"model.txt", "model"}, {"weights.bin", "weights"}}));
  EXPECT_TRUE(fs::equivalent(dir / "out" / "weights.bin", dir / "weights.bin"));
}

}  // namespace
}  // namespace porttool::io
