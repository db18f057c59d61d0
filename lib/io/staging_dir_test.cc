#include "lib/io/staging_dir.h"

#include <gtest/gtest.h>

#include "lib/io/atomic_file.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

namespace fs = std::filesystem;

// Nothing but `names` in `dir` (no staging or old directory left behind).
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(StagingDir, AppearsOnlyOnCommit) {
  testing::TempDir tmp;
  fs::path target = tmp / "out" / "bundle";
  {
    StagingDir staging(target, "test");
    EXPECT_EQ(staging.path().parent_path(), target.parent_path());
    WriteFileAtomic(staging.path() / "a.txt", "a");
    EXPECT_FALSE(fs::exists(target));
    staging.Commit();
  }
  EXPECT_EQ(testing::ReadFile(target / "a.txt"), "a");
  EXPECT_EQ(Entries(tmp / "out"), std::vector<std::string>{"bundle"});
}

TEST(StagingDir, AnErrorLeavesNothingAndKeepLeavesTheAttempt) {
  testing::TempDir tmp;
  fs::path target = tmp / "bundle";
  try {
    StagingDir staging(target, "test");
    WriteFileAtomic(staging.path() / "half.txt", "half");
    throw std::runtime_error("step failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(Entries(tmp.path()).empty());
  fs::path kept;
  {
    StagingDir staging(target, "test");
    WriteFileAtomic(staging.path() / "half.txt", "half");
    kept = staging.Keep();
  }
  EXPECT_EQ(testing::ReadFile(kept / "half.txt"), "half");
  EXPECT_FALSE(fs::exists(target));
}

TEST(StagingDir, CommitReplacesThePreviousOutputWhole) {
  testing::TempDir tmp;
  fs::path target = tmp / "bundle";
  fs::create_directories(target);
  WriteFileAtomic(target / "old.txt", "old");
  StagingDir staging(target, "test");
  WriteFileAtomic(staging.path() / "new.txt", "new");
  staging.Commit();
  EXPECT_FALSE(fs::exists(target / "old.txt"));
  EXPECT_EQ(testing::ReadFile(target / "new.txt"), "new");
  EXPECT_EQ(Entries(tmp.path()), std::vector<std::string>{"bundle"});
}

}  // namespace
}  // namespace porttool::io
