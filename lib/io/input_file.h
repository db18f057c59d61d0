// Every file and folder porttool reads goes through here, so that no filesystem object can hang
// it, crash it or slip past the output guard (lib/io/run_inputs.h):
//  - files are opened with O_NONBLOCK and refused unless regular: a FIFO named like a sample used
//    to block `kit` forever, and `run --input x=FIFO` the same;
//  - folders are listed with std::error_code overloads only: a symlink loop in a data folder used
//    to escape as exit 4 ("Too many levels of symbolic links");
//  - what is read is noted as an input of the run, by device and inode.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::io {

// An open, regular, readable file; closed on destruction.
class InputFd {
 public:
  // Error(kBadInput) naming `what` and the path when it cannot be opened or is not a regular
  // file (a FIFO, socket, device or folder: named as such).
  InputFd(const std::filesystem::path& path, std::string_view what);
  ~InputFd();
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;
  int get() const { return fd_; }
  uint64_t size() const { return size_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole content of a regular file (see InputFd).
std::string ReadInputFile(const std::filesystem::path& path, std::string_view what);

// What a folder holds, each entry classified without following a loop or throwing.
struct FolderListing {
  std::vector<std::filesystem::path> files;    // regular files (or symlinks to one), sorted
  std::vector<std::filesystem::path> folders;  // folders (or symlinks to one), sorted
  struct Skipped {
    std::filesystem::path path;
    std::string why;  // "a FIFO", "Too many levels of symbolic links", ...
  };
  std::vector<Skipped> skipped;  // everything else, sorted by path
};
// Error(kBadInput) naming `what` and `dir` when it is missing, not a folder or unreadable.
FolderListing ListInputFolder(const std::filesystem::path& dir, std::string_view what);

// The kind of a filesystem object in words ("a FIFO", "a socket", ...), for messages.
std::string FileKindName(mode_t mode);

}  // namespace porttool::io
