// Helpers for tests only (header-only so the library does not carry them): temp directories,
// running the porttool binary and capturing its output, and locating optional test assets.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "porttool_build_config.h"

namespace porttool::testing {

// True in the AddressSanitizer build (gcc says so with a macro, clang with __has_feature): some
// tests sample fewer cases there, or skip what cannot run instrumented.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "porttool-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Runs a shell command line, capturing stdout and stderr separately.
inline CommandResult RunShell(const std::string& command) {
  static int counter = 0;
  auto base = std::filesystem::temp_directory_path() /
              ("porttool-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::string out_file = base.string() + ".out", err_file = base.string() + ".err";
  int status = std::system((command + " >" + out_file + " 2>" + err_file + " </dev/null").c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out_file);
  r.err = ReadFile(err_file);
  std::filesystem::remove(out_file);
  std::filesystem::remove(err_file);
  return r;
}

// The porttool binary under test ($PORTTOOL_BIN, set by ctest).
inline std::string PorttoolBin() {
  const char* bin = std::getenv("PORTTOOL_BIN");
  return bin ? bin : "porttool";
}

// Runs `porttool <args>` (args are passed to the shell as written).
inline CommandResult RunPorttool(const std::string& args) {
  return RunShell(PorttoolBin() + " " + args);
}

// Peak RSS in KB of `porttool ARGS` (exit status `expected_exit`), measured by /usr/bin/time with
// its report in `dir`; -1 when /usr/bin/time is not installed. Not wait4 on a child forked here:
// a forked child's ru_maxrss starts from this process's RSS at the fork (Linux carries the old
// address space's high-water mark across exec), so a test binary that grew (ASan's quarantine
// keeps freed memory resident) would be measured instead of porttool.
inline int64_t PeakRssKb(const TempDir& dir, const std::string& args, int expected_exit = 0) {
  if (!std::filesystem::exists("/usr/bin/time")) return -1;
  const std::filesystem::path report = dir / "time.txt";
  CommandResult r =
      RunShell("/usr/bin/time -f %M -o " + report.string() + " " + PorttoolBin() + " " + args);
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.err;
  const std::string text = ReadFile(report);
  // With a non-zero exit, time writes "Command exited with non-zero status N" first.
  return std::stoll(text.substr(text.find_last_of('\n', text.size() - 2) + 1));
}

// Every subcommand that reads a model, run on model M (NODE: a node name for the ones that take
// one), writing under OUT: the replay list for input a subcommand must refuse.
inline std::vector<std::string> EveryModelCommand(const std::string& m, const std::string& node,
                                                  const std::string& out) {
  return {"check " + m,
          "inspect " + m,
          "infer-shapes " + m + " -o " + out + ".onnx",
          "simplify " + m + " -o " + out + ".onnx",
          "fold-constants " + m + " -o " + out + ".onnx",
          "rewrite " + m + " --rule decompose-gelu -o " + out + ".onnx",
          "chain " + m + " -p eliminate-identity -o " + out + ".onnx",
          "split " + m + " --at " + node + " -o " + out + ".split",
          "emit-header " + m + " -o " + out + ".h",
          "decide " + m,
          "decide " + m + " --target rknn-rk3588",
          "decide " + m + " --target stm32f767",
          "scaffold-op " + m + " --node " + node + " -o " + out + ".op",
          "kit " + m + " --all -o " + out + ".kits",
          "run " + m + " --random-inputs",
          "port " + m + " --target onnxruntime-cpu -o " + out + ".port",
          "port " + m + " --target rknn-rk3588 -o " + out + ".rk.port",
          "diff " + m + " " + m,
          "reduce " + m + " --check 'exit 1 # {model}' --jobs 1 -o " + out + ".reduced.onnx"};
}

// Every file under DIR, relative to it, sorted.
inline std::vector<std::string> RelativeFiles(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file())
      out.push_back(std::filesystem::relative(e.path(), dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Repository root (for testdata/).
inline std::filesystem::path SourceDir() { return PORTTOOL_SOURCE_DIR; }
inline std::filesystem::path TestData(const std::string& name) {
  return SourceDir() / "testdata" / name;
}
// The bundled demo detector (a Custom_GELU_0 node in a small conv net), the suites' common model.
inline std::filesystem::path DemoModelPath() { return TestData("demo_detector.onnx"); }

// `path` in single quotes, for a shell command line.
inline std::string ShellQuote(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}
// The demo model as a command-line argument.
inline std::string DemoArg() { return ShellQuote(DemoModelPath()); }

// Occurrences of `needle` in `text`, overlapping ones included.
inline size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// ../shared/models, or empty when absent (tests then GTEST_SKIP with a message).
inline std::filesystem::path SharedModelsDir() {
  const char* env = std::getenv("PORTTOOL_SHARED");
  std::filesystem::path dir =
      env ? std::filesystem::path(env) / "models" : SourceDir() / ".." / "shared" / "models";
  return std::filesystem::exists(dir) ? dir : std::filesystem::path();
}

// Debian's python with onnx 1.12 (not the first python3 on PATH).
inline constexpr const char* kSystemPython = "/usr/bin/python3";

// PORTTOOL_REQUIRE_ORACLES=1 (set by .ci/run, on a machine scripts/setup.sh set up): a test whose
// oracle, tool or shared model is missing fails instead of skipping, since ctest would report
// the skip as a pass.
inline bool OraclesRequired() {
  const char* env = std::getenv("PORTTOOL_REQUIRE_ORACLES");
  return env && std::string(env) == "1";
}

// Where ONNX Runtime for node is installed: $PORTTOOL_ORT_DIR, a folder holding
// node_modules/onnxruntime-node (what `scripts/setup.sh --ort` makes of scripts/ort), or else
// scripts/ort in the source tree.
inline std::filesystem::path OrtDir() {
  const char* env = std::getenv("PORTTOOL_ORT_DIR");
  return env && *env ? std::filesystem::path(env) : SourceDir() / "scripts" / "ort";
}

// Why ONNX Runtime cannot serve as the oracle here; empty when it can.
inline std::string OrtUnavailableReason() {
  std::error_code ec;  // a dangling or looping symlink means "not installed", not a crash
  if (!std::filesystem::exists(OrtDir() / "node_modules" / "onnxruntime-node", ec)) {
    return "onnxruntime-node absent from " + OrtDir().string() +
           " (scripts/setup.sh --ort, or PORTTOOL_ORT_DIR)";
  }
  if (RunShell("node --version").exit_code != 0) return "node absent";
  return "";
}

// The command line that runs scripts/ort_run.js with the ONNX Runtime OrtDir() names.
inline std::string OrtRunCommand() {
  return "PORTTOOL_ORT_DIR=" + ShellQuote(OrtDir()) + " node " +
         ShellQuote(SourceDir() / "scripts" / "ort_run.js");
}

}  // namespace porttool::testing

// Skips the test for a missing oracle, tool or shared model (the streamed reason says which), or
// fails it under PORTTOOL_REQUIRE_ORACLES=1. Skips for other reasons (a case that runs in
// another ctest entry, a build that cannot run it) stay GTEST_SKIP.
#define PORTTOOL_SKIP_MISSING(reason)                                                   \
  do {                                                                                  \
    if (::porttool::testing::OraclesRequired()) {                                       \
      GTEST_FAIL() << "required by PORTTOOL_REQUIRE_ORACLES=1 but missing: " << reason; \
    }                                                                                   \
    GTEST_SKIP() << reason;                                                             \
  } while (0)
