#include "lib/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/io/run_inputs.h"
#include "lib/util/error.h"

namespace porttool::io {
namespace fs = std::filesystem;

std::string FileKindName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

InputFd::InputFd(const fs::path& path, std::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) ThrowBadInput("{} '{}': cannot open: {}", what, path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    std::string kind = FileKindName(st.st_mode);
    ::close(fd_);
    fd_ = -1;
    ThrowBadInput("{} '{}' is {}, not a regular file; give a file", what, path.string(), kind);
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
  NoteInput(path, st.st_dev, st.st_ino);
}

InputFd::~InputFd() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ReadInputFile(const fs::path& path, std::string_view what) {
  InputFd fd(path, what);
  std::string data;
  data.resize(fd.size());
  size_t done = 0;
  while (true) {
    if (done == data.size()) data.resize(data.size() + 4096);  // the file grew since fstat
    ssize_t n = ::read(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ThrowBadInput("{} '{}': read failed: {}", what, path.string(), std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

FolderListing ListInputFolder(const fs::path& dir, std::string_view what) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    ThrowBadInput("{} '{}': {}", what, dir.string(), std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    ThrowBadInput("{} '{}' is {}, not a folder", what, dir.string(), FileKindName(st.st_mode));
  }
  NoteInput(dir, st.st_dev, st.st_ino);
  FolderListing out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    struct stat es {};
    // stat follows symlinks; ELOOP (a symlink loop) and dangling links end up skipped.
    if (::stat(p.c_str(), &es) != 0) {
      out.skipped.push_back({p, std::strerror(errno)});
    } else if (S_ISREG(es.st_mode)) {
      out.files.push_back(p);
    } else if (S_ISDIR(es.st_mode)) {
      out.folders.push_back(p);
    } else {
      out.skipped.push_back({p, FileKindName(es.st_mode)});
    }
  }
  if (ec) ThrowBadInput("{} '{}': cannot list: {}", what, dir.string(), ec.message());
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.folders.begin(), out.folders.end());
  std::sort(out.skipped.begin(), out.skipped.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

}  // namespace porttool::io
