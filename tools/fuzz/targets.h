// The fuzz targets of porttool, as plain functions: bytes in, nullopt when the input was handled
// (accepted, or refused with porttool::Error of a bad-input, usage or check-failed category), or
// a description of the finding (an internal error, another exception type). Sanitizer reports
// and crashes are findings of their own. libFuzzer entry points (fuzz_<name>.cc, built with
// -DPORTTOOL_FUZZ=ON) abort on a finding so the input is kept; the regression replay test runs
// every kept input through the same functions in the normal build.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/io/model.h"
#include "lib/util/error.h"

namespace porttool::fuzz {

using TargetFn = std::optional<std::string> (*)(const uint8_t* data, size_t size);
struct Target {
  const char* name;  // "fuzz_check": the binary and the regression folder
  TargetFn fn;
};
// Every target, for the replay test.
const std::vector<Target>& Targets();

// The targets themselves (bodies and what each covers in targets.cc), called by the libFuzzer
// entry points fuzz_<name>.cc.
std::optional<std::string> FuzzCheck(const uint8_t* data, size_t size);
std::optional<std::string> FuzzCodeText(const uint8_t* data, size_t size);
std::optional<std::string> FuzzEmitHeader(const uint8_t* data, size_t size);
std::optional<std::string> FuzzExecutor(const uint8_t* data, size_t size);
std::optional<std::string> FuzzInferShapes(const uint8_t* data, size_t size);
std::optional<std::string> FuzzInspect(const uint8_t* data, size_t size);
std::optional<std::string> FuzzJsonLoaders(const uint8_t* data, size_t size);
std::optional<std::string> FuzzModelLoad(const uint8_t* data, size_t size);
std::optional<std::string> FuzzPasses(const uint8_t* data, size_t size);
std::optional<std::string> FuzzSplit(const uint8_t* data, size_t size);
std::optional<std::string> FuzzTensorReaders(const uint8_t* data, size_t size);

// The library reads files, not buffers: a per-process scratch directory (in /dev/shm when there).
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    auto d = base / ("porttool-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    // libFuzzer's fork mode starts a process per job: each removes its directory when it ends
    // (a copy of the path that static destructors, which run first, leave alone).
    static const auto* doomed = new std::filesystem::path(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*doomed, ec);
    });
    return d;
  }();
  return dir;
}

inline std::filesystem::path WriteScratch(const std::string& name, std::string_view bytes) {
  auto path = ScratchDir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  return path;
}

inline io::Model LoadBytes(std::string_view bytes) {
  return io::Load(WriteScratch("model.onnx", bytes));
}

// Runs `body`; expected errors are handled input, anything else is a finding.
template <typename Fn>
std::optional<std::string> Guard(Fn&& body) {
  try {
    body();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) return std::string("internal error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("uncaught exception: ") + e.what();
  }
  return std::nullopt;
}

inline int AbortOnFinding(const std::optional<std::string>& finding) {
  if (finding) {
    std::fprintf(stderr, "FUZZ FINDING: %s\n", finding->c_str());
    std::abort();
  }
  return 0;
}

// Takes the first byte of the input as a selector (0 when empty).
inline uint8_t Selector(const uint8_t*& data, size_t& size) {
  if (size == 0) return 0;
  uint8_t s = data[0];
  ++data;
  --size;
  return s;
}

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace porttool::fuzz
