#include "lib/runtime/spill_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
// sys/mman.h defines MAP_TYPE, an enumerator name in onnx/defs/parser.h; unused here, and in a
// unity batch it would break every later file that includes the parser.
#undef MAP_TYPE
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {

SpillFile::SpillFile(const std::filesystem::path& dir, size_t expected)
    : dir_(dir.empty() ? std::filesystem::path(".") : dir), block_(MapBlock()) {
  entries_.reserve(expected);
  std::string pattern = (dir_ / "porttool-compare-XXXXXX").string();
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) {
    int error = errno;
    ::munmap(block_, kBlock);
    ThrowBadInput("cannot create a temporary file in '{}': {}", dir_.string(),
                  std::strerror(error));
  }
  ::unlink(pattern.c_str());
  SetDirect(true);  // best effort: file systems without direct I/O refuse, and stay buffered
}

SpillFile::~SpillFile() {
  ::close(fd_);
  ::munmap(block_, kBlock);
}

void SpillFile::Put(const std::string& name, const Tensor& value) {
  if (entries_.count(name)) return;
  const uint64_t offset = written_ + filled_;
  const char* p = static_cast<const char*>(value.raw());
  for (size_t left = value.bytes(); left > 0;) {
    size_t n = std::min(left, kBlock - filled_);
    std::memcpy(block_ + filled_, p, n);
    filled_ += n;
    p += n;
    left -= n;
    if (filled_ == kBlock) WriteBlock(kBlock);
  }
  entries_[name] = {value.dtype(), value.shape(), value.DebugString(), offset};
}

void SpillFile::Finish() {
  size_t padded = (filled_ + kAlign - 1) / kAlign * kAlign;
  std::memset(block_ + filled_, 0, padded - filled_);
  if (padded > 0) WriteBlock(padded);
}

void SpillFile::ReadAt(uint64_t offset, char* out, size_t bytes) {
  while (bytes > 0) {
    if (offset < window_ || offset >= window_ + window_size_) LoadWindow(offset);
    size_t n = std::min<uint64_t>(bytes, window_ + window_size_ - offset);
    std::memcpy(out, block_ + (offset - window_), n);
    out += n;
    offset += n;
    bytes -= n;
  }
}

Tensor SpillFile::Read(const Entry& entry) {
  Tensor t = Tensor::Uninitialized(entry.dtype, entry.shape);
  ReadAt(entry.offset, static_cast<char*>(t.mutable_raw()), t.bytes());
  return t;
}

// The block is mapped, not taken from the heap: in the heap it sat where the run's first
// tensors would go, and the never-trimmed heap grew around it (+1.6 MB RSS on det at 320).
char* SpillFile::MapBlock() {
  void* p = ::mmap(nullptr, kBlock, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    ThrowBadInput("cannot map a {} buffer: {}", util::FormatBytes(kBlock), std::strerror(errno));
  }
  return static_cast<char*>(p);
}

void SpillFile::SetDirect(bool on) {
  int flags = ::fcntl(fd_, F_GETFL);
  direct_ = on && flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
  if (!direct_ && flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
}

// A full disk is the likely failure: say where and how much was written, so the user can make
// room or point the temporary directory elsewhere.
void SpillFile::WriteBlock(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    ssize_t n = ::pwrite(fd_, block_ + done, bytes - done, static_cast<off_t>(written_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && direct_) {  // direct I/O accepted, then refused
      SetDirect(false);
      continue;
    }
    if (n <= 0) {
      ThrowBadInput(
          "cannot write the reference run's tensors to a temporary file in '{}' after {}: {}; "
          "free space there or use another temporary directory",
          dir_.string(), util::FormatBytes(written_ + done),
          n < 0 ? std::strerror(errno) : "nothing written");
    }
    done += static_cast<size_t>(n);
  }
  written_ += bytes;
  filled_ = 0;
}

// Reads the block that starts at `offset` rounded down to the alignment.
void SpillFile::LoadWindow(uint64_t offset) {
  window_ = offset / kAlign * kAlign;
  window_size_ = 0;
  while (window_size_ < kBlock) {
    ssize_t n = ::pread(fd_, block_ + window_size_, kBlock - window_size_,
                        static_cast<off_t>(window_ + window_size_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && direct_) {
      SetDirect(false);
      continue;
    }
    if (n < 0) {
      ThrowBadInput(
          "cannot read back the reference run's tensors from a temporary file in "
          "'{}': {}",
          dir_.string(), std::strerror(errno));
    }
    if (n == 0) break;  // the end of the file
    window_size_ += static_cast<size_t>(n);
  }
  if (offset >= window_ + window_size_) {
    ThrowInternal("the temporary file in '{}' ends at {} bytes, before offset {}", dir_.string(),
                  window_ + window_size_, offset);
  }
}

}  // namespace porttool::runtime
