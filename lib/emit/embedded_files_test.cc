// The embedded file sets (porttool_embed_files): every file of lib/emit/templates/ and
// lib/emit/runner_c/ and the custom-op ABI header are embedded byte for byte (a file added to the
// tree is embedded after the configure it triggers); an unknown path is an InternalError naming
// it; and every template is used by the scaffolding code (none left behind by a refactoring).
#include "lib/emit/embedded_files.h"

#include <gtest/gtest.h>

#include <set>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;

// Regular files under `dir` by '/'-separated path relative to it, dotfiles (.clang-format) left
// out.
std::set<std::string> FilesUnder(const fs::path& dir) {
  std::set<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename().string().front() == '.') continue;
    paths.insert(fs::relative(e.path(), dir).generic_string());
  }
  return paths;
}

TEST(EmbeddedFiles, EveryTemplateIsEmbeddedByteForByte) {
  fs::path dir = testing::SourceDir() / "lib/emit/templates";
  std::set<std::string> paths = FilesUnder(dir);
  EXPECT_GE(paths.size(), 30u);
  for (const auto& path : paths) {
    EXPECT_EQ(Template(path), testing::ReadFile(dir / path)) << path;
  }
}

TEST(EmbeddedFiles, RunnerSourcesAreTheRunnerCFiles) {
  fs::path dir = testing::SourceDir() / "lib/emit/runner_c";
  std::set<std::string> listed;
  for (const auto& f : RunnerSources()) {
    listed.insert(std::string(f.path));
    EXPECT_EQ(f.text, testing::ReadFile(dir / f.path)) << f.path;
  }
  EXPECT_EQ(listed, FilesUnder(dir));
}

TEST(EmbeddedFiles, TheAbiHeaderIsTheFileItself) {
  EXPECT_EQ(RuntimeFile("custom_op_abi.h"),
            testing::ReadFile(testing::SourceDir() / "lib/runtime/custom_op_abi.h"));
}

TEST(EmbeddedFiles, AnUnknownPathIsAnInternalErrorNamingIt) {
  try {
    Template("op/no_such_template.c");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("'op/no_such_template.c'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lib/emit/templates/"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RuntimeFile("runtime.h"), Error);
}

TEST(EmbeddedFiles, EveryTemplateIsUsedByTheScaffoldingCode) {
  std::string code = testing::ReadFile(testing::SourceDir() / "lib/emit/scaffold_op.cc") +
                     testing::ReadFile(testing::SourceDir() / "lib/emit/scaffold_adapters.cc") +
                     testing::ReadFile(testing::SourceDir() / "lib/emit/vendor_steps.cc");
  for (const auto& path : FilesUnder(testing::SourceDir() / "lib/emit/templates")) {
    EXPECT_NE(code.find("\"" + path + "\""), std::string::npos)
        << path << " is embedded but no code fills it";
  }
}

}  // namespace
}  // namespace porttool::emit
