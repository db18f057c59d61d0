// Read-only memory maps of weight files. External weights are never read at load time: a stage
// that needs a tensor's values maps the file and touches only the pages of that tensor, so a
// check of a model with 4 GB of external data stays at a few MB of RSS.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace porttool::io {

class MappedFile {
 public:
  // Maps the whole file read-only. Throws Error(kBadInput) naming the path on failure.
  static std::shared_ptr<const MappedFile> Open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  uint64_t size_;
};

}  // namespace porttool::io
