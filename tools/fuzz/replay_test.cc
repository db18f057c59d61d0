// Replays every input the fuzzers kept (testdata/fuzz-regressions/<target>/) through the same
// target code in the normal build: each must now be handled (accepted or refused with a
// bad-input error), never an internal error or another exception. The sanitizer build runs it
// too, which is where a fixed memory error would show again.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "lib/util/testing.h"
#include "tools/fuzz/model_mutator.h"
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
                               "fuzz_tensor_readers", "fuzz_emit_header", "fuzz_code_text"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

// The JSON loaders' target on the shipped rules files through each of its six loaders (the right
// one loads, the others refuse as user error): the seeds a fuzzing run starts from, and a check
// that every loader is reachable from the first byte.
TEST(FuzzJsonLoaders, ShippedRulesFilesThroughEveryLoader) {
  for (const char* file : {"decision/facts.json", "decision/table.json", "decision/remedies.json",
                           "targets/rknn-rk3588.json", "targets/stm32f767.json"}) {
    std::string text = testing::ReadFile(fs::path(testing::SourceDir()) / "rules" / file);
    for (uint8_t which = 0; which < 6; ++which) {
      std::string input = std::string(1, static_cast<char>(which)) + text;
      auto finding = FuzzJsonLoaders(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      EXPECT_FALSE(finding) << file << " through loader " << int(which) << ": " << *finding;
    }
  }
}

// The structure-aware mutator keeps models parseable while changing what stages interpret: on
// the demo model, every mutation still parses, and most of them change the model.
TEST(ModelMutator, MutationsParseAndChangeTheModel) {
  std::string demo = testing::ReadFile(testing::DemoModelPath());
  ASSERT_FALSE(demo.empty());
  int changed = 0;
  constexpr int kSeeds = 400;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    auto mutated = MutateModelBytes(demo, seed);
    ASSERT_TRUE(mutated.has_value()) << "seed " << seed;
    onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromString(*mutated)) << "seed " << seed;
    if (*mutated != demo) ++changed;
  }
  EXPECT_GT(changed, kSeeds * 3 / 4);
  EXPECT_FALSE(MutateModelBytes("\xff\xff not a model", 1).has_value());
}

// The libFuzzer-side wrapper keeps the selector prefix and falls back to byte mutations for
// input that does not parse.
TEST(ModelMutator, PrefixIsKeptAndUnparsableInputGoesToBytes) {
  std::string demo = testing::ReadFile(testing::DemoModelPath());
  std::vector<uint8_t> buf(2 + demo.size() * 2);
  buf[0] = 0xAB;
  buf[1] = 0xCD;
  std::memcpy(buf.data() + 2, demo.data(), demo.size());
  static int byte_calls = 0;
  auto bytes = [](uint8_t*, size_t size, size_t) -> size_t {
    ++byte_calls;
    return size;
  };
  size_t n = MutateModelInput(buf.data(), 2 + demo.size(), buf.size(), 3, 2, bytes);
  EXPECT_EQ(buf[0], 0xAB);
  EXPECT_EQ(buf[1], 0xCD);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromArray(buf.data() + 2, static_cast<int>(n - 2)));
  EXPECT_EQ(byte_calls, 0);
  uint8_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  MutateModelInput(junk, sizeof junk, sizeof junk, 3, 2, bytes);
  EXPECT_EQ(byte_calls, 1);
}

}  // namespace
}  // namespace porttool::fuzz
