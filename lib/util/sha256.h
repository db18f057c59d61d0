// SHA-256, streamed, so a multi-GB model can be hashed through a memory map without a copy.
// Used to identify the source model in pipeline manifests, headers and reports.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace porttool::util {

class Sha256 {
 public:
  Sha256();
  void Update(std::span<const uint8_t> data);
  std::string HexDigest();  // finalises; call once

 private:
  void Block(const uint8_t* p);
  void Blocks(const uint8_t* p, size_t n);  // the SHA extensions where the CPU has them
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Hex digest of a whole file (read through a memory map). Throws Error(kBadInput) if unreadable.
std::string Sha256File(const std::filesystem::path& path);

}  // namespace porttool::util
