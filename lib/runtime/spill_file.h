// The reference run's tensors while the candidate runs: one temporary file in `dir`, unlinked as
// soon as it is created so that it goes away with the process however that ends, written
// sequentially as the reference produces tensors and read back a block at a time. Memory is then
// one run's live tensors whatever the model; the disk holds what the two runs share. Used by the
// per-tensor comparison (compare.h) and the isolated per-layer comparison (isolate.h).
// The file is written and read with direct I/O where the file system allows it, through one
// aligned block: buffered, the tensors would fill the page cache (memory for the machine, if not
// in this process's RSS), and on the VM we measured, buffered writes of 1.5 GB crawled at 50-120
// MB/s while direct ones ran at 950 MB/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/runtime/tensor.h"

namespace porttool::runtime {

class SpillFile {
 public:
  struct Entry {
    int32_t dtype = 0;
    std::vector<int64_t> shape;
    std::string text;  // the tensor's DebugString, for notes
    uint64_t offset = 0;
  };

  // `expected` tensors: the index is sized up front so that it does not grow between the
  // tensors of the run it records.
  SpillFile(const std::filesystem::path& dir, size_t expected);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends `value` unless a tensor of that name is already there (a tensor is produced once).
  void Put(const std::string& name, const Tensor& value);

  // Writes what is still buffered (padded to the alignment direct I/O needs); call once, after
  // the last Put and before the first ReadAt.
  void Finish();

  const Entry* Find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // `bytes` bytes at `offset`, through the block (tensors are read in order, a chunk at a time).
  void ReadAt(uint64_t offset, char* out, size_t bytes);

  // The whole tensor `entry` back in memory (a tensor a computation needs as a whole).
  Tensor Read(const Entry& entry);

 private:
  static constexpr size_t kAlign = 4096;  // what direct I/O needs of offsets and sizes
  static constexpr size_t kBlock = size_t{1} << 20;

  static char* MapBlock();
  void SetDirect(bool on);
  void WriteBlock(size_t bytes);
  void LoadWindow(uint64_t offset);

  std::filesystem::path dir_;
  char* block_;  // kBlock bytes, page-aligned
  int fd_ = -1;
  bool direct_ = false;
  size_t filled_ = 0;     // bytes in block_ not written yet
  uint64_t written_ = 0;  // bytes in the file
  uint64_t window_ = 0;   // while reading: the file offset block_ holds, and how many bytes
  size_t window_size_ = 0;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace porttool::runtime
