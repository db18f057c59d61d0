// A directory output that appears complete or not at all: it is built in a staging directory
// beside its destination (same file system, so the final step is one rename) and moved into place
// only when everything in it was written. An error, or an exception unwinding past it, removes
// the staging directory; a caller that wants to show a failed attempt keeps it instead. A
// destination that already exists is swapped out and removed only after the new one is in place,
// and put back if that rename fails: the user's previous output is never lost half-way.
// Whether an existing destination may be replaced at all is io::CheckOutputDir's rule
// (lib/io/output_dir.h), checked before the staging directory is made.
#pragma once

#include <filesystem>
#include <string_view>

#include "lib/io/output_dir.h"

namespace porttool::io {

class StagingDir {
 public:
  // Creates `.<name>.tmp-XXXXXX` next to `target` (creating target's parent directories), locks
  // it for as long as this object lives (a later run tells a crashed run's directory from a live
  // one by the lock) and writes the output marker for `format` into it. Error(kBadInput) naming
  // the directory when that is impossible.
  StagingDir(std::filesystem::path target, std::string_view format);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& target() const { return target_; }

  // Renames the staging directory onto the target, replacing what is there (the caller decides
  // beforehand whether replacing is allowed). Error(kBadInput) when the rename fails.
  void Commit();
  // Leaves the staging directory on disk (e.g. a failed run kept for inspection), renamed to
  // `.<name>.kept-XXXXXX` so that the next run does not clear it as stale; returns where it is.
  std::filesystem::path Keep();

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;  // empty once committed or kept
  DirLock lock_;
};

}  // namespace porttool::io
