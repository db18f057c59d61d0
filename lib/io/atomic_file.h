// Atomic file writes: content goes to a temp file in the destination directory, is flushed, and
// is renamed over the destination only when complete. A failure or an exception removes the temp
// file, so porttool never leaves a half-written output behind. Several files that form one output
// (a model and its data file, a header and its weights, a table beside a model) are committed
// together by CommitAll, which puts every target back as it was when one of the renames fails.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lib/util/error.h"

namespace porttool::io {

// A failure to write an output (no space, no permission, a failed rename): Error(kBadInput) of a
// type of its own, so code that turns other errors into notes (a test kit that cannot be made)
// still stops on it.
class OutputError : public Error {
 public:
  using Error::Error;
};
template <typename... Args>
[[noreturn]] void ThrowOutputError(fmt::format_string<Args...> f, Args&&... args) {
  throw OutputError(ErrorKind::kBadInput, fmt::format(f, std::forward<Args>(args)...));
}

class AtomicFile {
 public:
  // Creates the temp file. Throws OutputError (kBadInput) if the directory is not writable; every
  // failure to write or commit below is an OutputError too.
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();  // removes the temp file unless it was renamed onto the target
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  void Write(std::string_view data);
  // Makes the temp file a hard link to `source` instead of written content (a copy when linking
  // fails, e.g. across file systems); returns true when it had to copy. Nothing is written yet.
  bool LinkOrCopyFrom(const std::filesystem::path& source);
  // fsyncs, closes and renames onto the target.
  void Commit();
  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  friend void CommitAll(const std::vector<AtomicFile*>& files);
  void Finish();  // fsync + close; Error(kBadInput) when the data did not reach the disk

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool renamed_ = false;
};

// Writes a whole file atomically.
void WriteFileAtomic(const std::filesystem::path& path, std::string_view content);

// Commits several AtomicFiles, after every one of them was written, so that a command writing
// several outputs writes all of them or none:
//  - every file is flushed first; a failure there renames nothing;
//  - the previous version of each target that exists is kept (a hard link beside it, or, where
//    the file system has no hard links, the target renamed aside), then each temp file is renamed
//    onto its target;
//  - when rename k fails, renames 0..k-1 are undone (the kept previous file renamed back, or the
//    new file removed where there was none) and OutputError (kBadInput) says so; if an undo itself
//    fails, the message names where the previous file is kept;
//  - on success the kept previous versions are removed.
// Before any rename, every target passes GuardOutput (lib/io/run_inputs.h): an output that would
// replace an input of the run is refused (kUsage) and nothing is written.
// What this does not cover: each rename is atomic, the sequence is not. A crash or power loss
// between two renames (or during the undo) leaves some targets new and some old, and may leave
// `.<name>.old-*` files beside them; no single target is ever half-written.
void CommitAll(const std::vector<AtomicFile*>& files);

// The outputs of one command, each written in full to its temp file as it is added, committed
// together by Commit() (CommitAll). Destroying it uncommitted removes every temp file.
class OutputSet {
 public:
  AtomicFile& Add(std::filesystem::path target);
  void Commit();
  bool empty() const { return files_.empty(); }

 private:
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

// Throws Error(kBadInput) when `path` cannot become a file: it is an existing directory, or its
// parent is missing or not a directory; OutputError(kUsage) when it is an input of the run read
// so far (GuardOutput, lib/io/run_inputs.h). Called before any output is written.
void CheckOutputFilePath(const std::filesystem::path& path);
// Creates `dir` (and parents) for outputs; Error(kBadInput) naming it when that fails (a file is
// in the way, no permission, read-only file system); OutputError(kUsage) when it is or holds an
// input of the run (GuardOutput).
void CreateOutputDir(const std::filesystem::path& dir);

// rename(2) for every rename that puts an output in place (AtomicFile, CommitAll, StagingDir),
// so that the test hook below reaches all of them.
std::error_code RenameOutput(const std::filesystem::path& from, const std::filesystem::path& to);

// Test hook, not a user option: from now on, the `nth` call of RenameOutput (1-based) fails once
// with EIO, as a full or failing disk would; 0 turns it off. The porttool binary sets it from the
// environment variable PORTTOOL_TEST_FAIL_COMMIT=N so the CLI tests can fail the Nth rename of a
// subcommand run as a subprocess.
void SetRenameFaultForTesting(int nth);

}  // namespace porttool::io
