// Replays every input the fuzzers kept (testdata/fuzz-regressions/<target>/) through the same
// target code in the normal build: each must now be handled (accepted or refused with a
// bad-input error), never an internal error or another exception. The sanitizer build runs it
// too, which is where a fixed memory error would show again.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "lib/util/testing.h"
#include "tools/fuzz/targets.h"

namespace porttool::fuzz {
namespace {

namespace fs = std::filesystem;

TEST(FuzzRegressions, EveryKeptInputIsHandled) {
  const fs::path root = fs::path(testing::SourceDir()) / "testdata" / "fuzz-regressions";
  int replayed = 0;
  for (const auto& target : Targets()) {
    const fs::path dir = root / target.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      std::string bytes = testing::ReadFile(entry.path());
      auto finding = target.fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      EXPECT_FALSE(finding.has_value()) << entry.path() << ": " << finding.value_or("");
      ++replayed;
    }
  }
  std::printf("replayed %d kept fuzz inputs\n", replayed);
  // The corpus ships with the source: replaying nothing means the test lost it, not a pass.
  EXPECT_GT(replayed, 0) << "no kept input found under " << root;
}

// A folder of kept inputs named after no registered target would never be replayed.
TEST(FuzzRegressions, EveryCorpusFolderBelongsToATarget) {
  const fs::path root = fs::path(testing::SourceDir()) / "testdata" / "fuzz-regressions";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    bool known = std::any_of(Targets().begin(), Targets().end(),
                             [&](const auto& t) { return t.name == name; });
    EXPECT_TRUE(known) << entry.path() << " names no fuzz target: its inputs are never replayed";
  }
}

// A target missing from the table would have its kept inputs skipped silently.
TEST(FuzzRegressions, TargetsAreRegistered) {
  std::vector<std::string> names;
  for (const auto& t : Targets()) names.push_back(t.name);
  for (const char* expected : {"fuzz_model_load", "fuzz_check", "fuzz_infer_shapes", "fuzz_inspect",
                               "fuzz_split", "fuzz_executor", "fuzz_passes", "fuzz_json_loaders",
                               "fuzz_tensor_readers", "fuzz_emit_header"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

}  // namespace
}  // namespace porttool::fuzz
