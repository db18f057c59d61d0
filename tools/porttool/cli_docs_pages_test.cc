// The documentation against the CLI it documents:
//   - every subcommand in the CLI's own table (cli::RegisterAll, what Main parses with and
//     `porttool --help` lists) has its page docs/cli/<name>.md, and README.md links to it, so a
//     new subcommand fails here until it is documented;
//   - every relative Markdown link in README.md, CHANGELOG.md and docs/**/*.md names an existing
//     file, and its #anchor, when it has one, a heading of that file;
//   - README.md stays a page a newcomer reads: at most 300 lines;
//   - the README's ```sh blocks run as written.
// Which ```sh blocks run: those whose every command is a `porttool` invocation (the tour on
// testdata/demo_detector.onnx). They run in order, from a fresh temp directory holding a
// `testdata` symlink to the source tree's, with the built binary ($PORTTOOL_BIN) in place of
// `porttool`, and each must end with the exit code its comment documents (`# exit N`), else 0.
// Not run: blocks with any other command — the two commands (scripts/demo.sh and scripts/test.sh
// install packages and build; `.ci/run` and ctest run those), and install steps (cmake, cpack,
// dpkg). Neither are the docs/cli pages' blocks: they name models outside the repository
// (../shared/models) or need SDKs and boards. The README's port example is an output listing
// (```, not ```sh); the tour runs the same command.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "lib/util/testing.h"
#include "tools/porttool/commands.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::SourceDir;

std::vector<std::string> Subcommands() {
  CLI::App app;
  cli::RunFn run;
  cli::RegisterAll(app, run);
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// README.md, CHANGELOG.md and every .md under docs/, relative to the source dir.
std::vector<fs::path> MarkdownFiles() {
  std::vector<fs::path> files = {"README.md", "CHANGELOG.md"};
  for (const auto& e : fs::recursive_directory_iterator(SourceDir() / "docs")) {
    if (e.is_regular_file() && e.path().extension() == ".md") {
      files.push_back(fs::relative(e.path(), SourceDir()));
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The text outside fenced code blocks, with inline code spans blanked: what Markdown renders as
// links and headings.
std::vector<std::string> ProseLines(const std::string& text) {
  std::vector<std::string> out;
  bool fenced = false;
  for (std::string line : Lines(text)) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    bool code = false;
    for (char& c : line) {
      if (c == '`') code = !code;
      if (code || c == '`') c = ' ';
    }
    out.push_back(line);
  }
  return out;
}

// GitHub's anchors for a file's headings: lower case, punctuation dropped (not '-' or '_'),
// spaces as '-', repeats suffixed -1, -2, ...
std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  bool fenced = false;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    size_t start = line.find_first_not_of('#');
    if (start == std::string::npos || line[start] != ' ') continue;
    std::string slug;
    for (char c : line.substr(start + 1)) {
      unsigned char u = static_cast<unsigned char>(c);
      if (std::isalnum(u) || c == '-' || c == '_' || u >= 0x80) {
        slug += static_cast<char>(std::tolower(u));
      } else if (c == ' ') {
        slug += '-';
      }
    }
    int n = seen[slug]++;
    anchors.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
  }
  return anchors;
}

TEST(DocPages, EverySubcommandHasItsPageAndAReadmeLine) {
  const std::string readme = ReadFile(SourceDir() / "README.md");
  const std::vector<std::string> names = Subcommands();
  ASSERT_GE(names.size(), 20u) << "the CLI table lists too few subcommands";
  for (const std::string& name : names) {
    const fs::path page = SourceDir() / "docs" / "cli" / (name + ".md");
    ASSERT_TRUE(fs::is_regular_file(page))
        << "subcommand '" << name << "' has no page docs/cli/" << name << ".md";
    EXPECT_NE(ReadFile(page).find(name), std::string::npos) << page << " never names " << name;
    EXPECT_NE(readme.find("(docs/cli/" + name + ".md)"), std::string::npos)
        << "README.md has no line linking to docs/cli/" << name << ".md";
  }
}

TEST(DocPages, RelativeLinksResolve) {
  const std::regex link(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const fs::path& rel : MarkdownFiles()) {
    const fs::path file = SourceDir() / rel;
    ASSERT_TRUE(fs::is_regular_file(file)) << rel;
    for (const std::string& line : ProseLines(ReadFile(file))) {
      for (std::sregex_iterator m(line.begin(), line.end(), link), end; m != end; ++m) {
        std::string target = (*m)[1];
        if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 ||
            target.rfind("mailto:", 0) == 0) {
          continue;
        }
        std::string anchor;
        if (size_t hash = target.find('#'); hash != std::string::npos) {
          anchor = target.substr(hash + 1);
          target = target.substr(0, hash);
        }
        const fs::path to = target.empty() ? file : file.parent_path() / target;
        ++checked;
        ASSERT_TRUE(fs::exists(to)) << rel << ": link to " << (*m)[1] << ": no such file";
        if (!anchor.empty() && to.extension() == ".md") {
          EXPECT_TRUE(Anchors(ReadFile(to)).count(anchor))
              << rel << ": link to " << (*m)[1] << ": no heading with that anchor";
        }
      }
    }
  }
  EXPECT_GT(checked, 50) << "the link scan found almost no links";
}

TEST(DocPages, ReadmeIsAtMost300Lines) {
  const size_t lines = Lines(ReadFile(SourceDir() / "README.md")).size();
  EXPECT_LE(lines, 300u) << "README.md is for a newcomer; move reference text to docs/";
}

struct ShCommand {
  std::string args;  // after `porttool `
  int expected_exit = 0;
  std::string text;  // as written, for messages
};

// The command without its comment, and the comment ('#' after a blank, outside quotes).
std::pair<std::string, std::string> SplitComment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      return {line.substr(0, i), line.substr(i + 1)};
    }
  }
  return {line, ""};
}

// The README's ```sh blocks, each as its commands (continuation lines joined); `all_porttool`
// says whether every command is a porttool invocation.
struct ShBlock {
  std::vector<ShCommand> commands;
  bool all_porttool = true;
};

std::vector<ShBlock> ReadmeShBlocks() {
  std::vector<ShBlock> blocks;
  bool in_sh = false, in_other = false;
  std::string pending;
  for (const std::string& line : Lines(ReadFile(SourceDir() / "README.md"))) {
    if (!in_sh && !in_other && line.rfind("```", 0) == 0) {
      (line == "```sh" ? in_sh : in_other) = true;
      if (in_sh) blocks.emplace_back();
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      in_sh = in_other = false;
      continue;
    }
    if (!in_sh) continue;
    auto [command, comment] = SplitComment(line);
    const bool continued = !command.empty() && command.find_last_not_of(' ') != std::string::npos &&
                           command[command.find_last_not_of(' ')] == '\\';
    if (continued) command.erase(command.find_last_not_of(' '));
    pending += command;
    if (continued) continue;
    const size_t first = pending.find_first_not_of(' ');
    if (first != std::string::npos) {
      const std::string cmd = pending.substr(first);
      ShCommand c;
      c.text = cmd;
      std::smatch m;
      if (std::regex_search(comment, m, std::regex(R"(\bexit (\d+))"))) {
        c.expected_exit = std::stoi(m[1]);
      }
      if (cmd.rfind("porttool ", 0) == 0) {
        c.args = cmd.substr(9);
      } else {
        blocks.back().all_porttool = false;
      }
      blocks.back().commands.push_back(c);
    }
    pending.clear();
  }
  return blocks;
}

TEST(DocPages, ReadmeShBlocksRunAsDocumented) {
  int run = 0;
  for (const ShBlock& block : ReadmeShBlocks()) {
    if (!block.all_porttool || block.commands.empty()) continue;
    testing::TempDir dir;
    fs::create_directory_symlink(SourceDir() / "testdata", dir / "testdata");
    for (const ShCommand& c : block.commands) {
      // The tour writes into the current directory; never through the testdata symlink.
      for (const char* out : {"-o testdata", "--output testdata", "--output-dir testdata"}) {
        ASSERT_EQ(c.args.find(out), std::string::npos) << c.text << ": writes into testdata/";
      }
      const testing::CommandResult r = testing::RunShell(
          "cd " + testing::ShellQuote(dir.path()) + " && " + testing::PorttoolBin() + " " + c.args);
      EXPECT_EQ(r.exit_code, c.expected_exit) << "README: " << c.text << "\nstdout:\n"
                                              << r.out.substr(0, 2000) << "\nstderr:\n"
                                              << r.err.substr(0, 2000);
      ++run;
    }
  }
  EXPECT_GE(run, 10) << "the README's tour (a ```sh block of porttool commands) is gone";
}

}  // namespace
}  // namespace porttool
