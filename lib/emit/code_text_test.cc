// The escapers of code_text.h: hostile names (comment terminators, quotes, backslashes, line
// breaks, trigraphs, NUL, invalid UTF-8) come out as text of the target language, checked by the
// languages themselves: a compiled C program prints its literal back byte for byte, python3
// encodes its literal back with surrogateescape, cmake prints its quoted argument back, sh echoes
// its word back, and gcc -Werror compiles comments holding each name.
#include "lib/emit/code_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

using testing::RunShell;
using testing::TempDir;

using namespace std::string_literals;

// Names a hostile model may carry; each one broke some generated file before code_text.h.
std::vector<std::string> HostileNames() {
  return {"Gelu */ int porttool_injected(void) { return 42; } /*",
          "a\"b'c",
          "back\\slash\\",
          "line\nbreak\r\n",
          "tri?\?/graph?\?=?\?(?\?'",
          "??\?/",
          "#include <stdio.h>",
          "${HOME} $(id) `id` @VAR@ ;list",
          "nul\0byte"s,
          "\x80\xff invalid \xc3",
          "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xae",
          "/*lead",
          "trail*",
          "trail/",
          "1\0012"s,
          "\x01\x7f\t",
          ""};
}

TEST(CodeText, CStringLiteralReadsBackByteForByte) {
  TempDir dir;
  std::string program = "#include <stdio.h>\nint main(void) {\n";
  for (const auto& name : HostileNames()) {
    program += fmt::format("  fwrite({0}, 1, sizeof {0} - 1, stdout);\n  putchar('|');\n",
                           CStringLiteral(name));
  }
  program += "  return 0;\n}\n";
  testing::WriteFile(dir / "p.c", program);
  auto build = RunShell(fmt::format(
      "cd {0} && cc -std=c99 -Wall -Wextra -Werror -pedantic -Wtrigraphs p.c -o p && "
      "c++ -std=c++17 -Wall -Wextra -Werror -x c++ p.c -o p2 && (./p > out; ./p2 > out2)",
      dir.path().string()));
  ASSERT_EQ(build.exit_code, 0) << build.err << program;
  std::string want;
  for (const auto& name : HostileNames()) want += name + "|";
  EXPECT_EQ(testing::ReadFile(dir / "out"), want);
  EXPECT_EQ(testing::ReadFile(dir / "out2"), want);
}

TEST(CodeText, CStringBodyIsPrintableWithoutTrigraphsOrRawQuotes) {
  for (const auto& name : HostileNames()) {
    std::string body = CStringBody(name);
    EXPECT_EQ(body.find("??"), std::string::npos) << body;
    for (size_t i = 0; i < body.size(); ++i) {
      ASSERT_TRUE(body[i] >= 0x20 && body[i] < 0x7F) << body;
      if (body[i] == '\\')
        ++i;  // the escaped character
      else
        EXPECT_NE(body[i], '"') << body;
    }
  }
}

TEST(CodeText, CommentTextCompilesInBothCommentStyles) {
  TempDir dir;
  std::string source;
  for (const auto& name : HostileNames()) {
    std::string text = CommentText(name);
    EXPECT_EQ(text.find("*/"), std::string::npos) << text;
    EXPECT_EQ(text.find("/*"), std::string::npos) << text;
    EXPECT_EQ(text.find("??"), std::string::npos) << text;
    for (char c : text) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << text;
    // The template's own characters around it must not pair with the name's.
    source += "/*" + text + "*/\n// " + text + "\nint porttool_after_comment_" +
              std::to_string(source.size()) + ";\n";
  }
  testing::WriteFile(dir / "c.c", source);
  auto build = RunShell(fmt::format(
      "cd {0} && cc -std=c99 -Wall -Wextra -Werror -Wcomment -Wtrigraphs -c c.c -o c.o && "
      "c++ -std=c++17 -Wall -Wextra -Werror -x c++ -c c.c -o c2.o && nm c.o",
      dir.path().string()));
  ASSERT_EQ(build.exit_code, 0) << build.err << source;
  // Every declaration after a comment survived: no comment swallowed the line after it.
  EXPECT_EQ(testing::CountOf(build.out, " porttool_after_comment_"), HostileNames().size())
      << build.out << source;
}

TEST(CodeText, PythonStringLiteralReadsBackWithSurrogateescape) {
  TempDir dir;
  std::string script = "import sys\nnames = [\n";
  for (const auto& name : HostileNames()) {
    script += "    " + PythonStringLiteral(name) + ",\n    \"" + PythonStringBody(name) +
              "\",\n    \"\"\"" + PythonStringBody(name) + "\"\"\",\n";
  }
  script +=
      "]\nfor n in names:\n    sys.stdout.buffer.write(n.encode('utf-8', 'surrogateescape') + "
      "b'|')\n";
  testing::WriteFile(dir / "p.py", script);
  auto run =
      RunShell(fmt::format("{} -W error {}/p.py", testing::kSystemPython, dir.path().string()));
  ASSERT_EQ(run.exit_code, 0) << run.err << script;
  std::string want;
  for (const auto& name : HostileNames()) want += name + "|" + name + "|" + name + "|";
  EXPECT_EQ(run.out, want);
}

TEST(CodeText, CMakeQuotedReadsBackAllButControlBytes) {
  TempDir dir;
  std::string script;
  std::string want;
  for (const auto& name : HostileNames()) {
    script += "message(" + CMakeQuoted(name) + ")\n";
    std::string expect;
    for (char c : name) {
      auto u = static_cast<uint8_t>(c);
      bool kept = (u >= 0x20 && u != 0x7F) || c == '\n' || c == '\t' || c == '\r';
      expect += kept ? c : '?';
    }
    want += expect + "\n";
  }
  testing::WriteFile(dir / "s.cmake", script);
  auto run = RunShell(fmt::format("cmake -P {}/s.cmake", dir.path().string()));
  ASSERT_EQ(run.exit_code, 0) << run.err << script;
  EXPECT_EQ(run.err, want);
}

TEST(CodeText, ShellWordIsOneWord) {
  TempDir dir;
  std::string script = "#!/bin/sh\n";
  std::string want;
  for (const auto& name : HostileNames()) {
    script += "printf '%s|' " + ShellWord(name) + "\n# " + LineCommentText(name) + "\n";
    std::string expect;
    for (char c : name) expect += c >= 0x20 && c < 0x7F ? c : '?';
    want += expect + "|";
  }
  testing::WriteFile(dir / "s.sh", script);
  auto run = RunShell(fmt::format("HOME=/nonexistent sh {}/s.sh", dir.path().string()));
  ASSERT_EQ(run.exit_code, 0) << run.err << script;
  EXPECT_EQ(run.out, want);
}

// An #include "..." has no escapes: a path it cannot hold is refused, never written.
TEST(CodeText, IncludeNamesAreRefusedWhenCCannotHoldThem) {
  EXPECT_EQ(CIncludeName("../inc/model-v1.h", "header"), "\"../inc/model-v1.h\"");
  for (std::string bad :
       {"a\"b.h", "a\nb.h", "a\\b.h", "a//b.h", "a/*b.h", "a?\?/b.h", "a'b.h", "\xff.h", ""}) {
    try {
      CIncludeName(bad, "header");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
    }
  }
}

TEST(CodeText, JsonAndMarkdownAreValidUtf8) {
  for (const auto& name : HostileNames()) {
    auto parsed = nlohmann::json::parse(JsonString(name));
    ASSERT_TRUE(parsed.is_string());
    std::string md = MarkdownText(name);
    EXPECT_EQ(md.find('`'), std::string::npos) << md;
    EXPECT_EQ(md.find('\n'), std::string::npos) << md;
  }
  EXPECT_EQ(JsonString("a\"b"), "\"a\\\"b\"");
}

}  // namespace
}  // namespace porttool::emit
