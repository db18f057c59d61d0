#include "lib/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/util/error.h"

namespace porttool::io {
namespace fs = std::filesystem;

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
  fs::path dir = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
  std::string tmpl = (dir / fmt::format(".{}.tmp-XXXXXX", target_.filename().string())).string();
  fd_ = ::mkstemp(tmpl.data());
  if (fd_ < 0) {
    ThrowBadInput("cannot write '{}': {}", target_.string(), std::strerror(errno));
  }
  ::fchmod(fd_, 0644);
  temp_ = tmpl;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::Write(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowBadInput("writing '{}' failed: {}", target_.string(), std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicFile::Commit() {
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    ThrowBadInput("writing '{}' failed: {}", target_.string(), std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    ThrowBadInput("cannot rename onto '{}': {}", target_.string(), std::strerror(errno));
  }
  committed_ = true;
}

void WriteFileAtomic(const fs::path& path, std::string_view content) {
  AtomicFile file(path);
  file.Write(content);
  file.Commit();
}

void CommitAll(const std::vector<AtomicFile*>& files) {
  for (AtomicFile* f : files) f->Commit();
}

void CheckOutputFilePath(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    ThrowBadInput("'{}' is a directory; give a file name for this output", path.string());
  }
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) {
    ThrowBadInput("cannot write '{}': '{}' is not an existing directory", path.string(),
                  dir.string());
  }
}

void CreateOutputDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    ThrowBadInput("cannot create output directory '{}': {}", dir.string(),
                  ec ? ec.message() : "a file is in the way");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    ThrowBadInput("output directory '{}' is not writable: {}", dir.string(), std::strerror(errno));
  }
}

}  // namespace porttool::io
