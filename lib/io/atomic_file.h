// Atomic file writes: content goes to a temp file in the destination directory, is flushed, and
// is renamed over the destination only when complete. A failure or an exception removes the temp
// file, so porttool never leaves a half-written output behind.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::io {

class AtomicFile {
 public:
  // Creates the temp file. Throws Error(kBadInput) if the directory is not writable.
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();  // removes the temp file unless Commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  void Write(std::string_view data);
  // fsyncs, closes and renames onto the target.
  void Commit();
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes a whole file atomically.
void WriteFileAtomic(const std::filesystem::path& path, std::string_view content);

// Commits several AtomicFiles together, after every one of them was written: a command that
// writes several outputs writes all of them or none (a failure before CommitAll leaves none).
void CommitAll(const std::vector<AtomicFile*>& files);

// Throws Error(kBadInput) when `path` cannot become a file: it is an existing directory, or its
// parent is missing or not a directory. Called before any output is written.
void CheckOutputFilePath(const std::filesystem::path& path);
// Creates `dir` (and parents) for outputs; Error(kBadInput) naming it when that fails (a file is
// in the way, no permission, read-only file system).
void CreateOutputDir(const std::filesystem::path& dir);

}  // namespace porttool::io
