#include "lib/io/staging_dir.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "lib/io/atomic_file.h"
#include "lib/io/run_inputs.h"
#include "lib/util/error.h"

namespace porttool::io {
namespace fs = std::filesystem;
namespace {

fs::path MakeTempDirBeside(const fs::path& target, const char* tag) {
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string pattern =
      (parent / fmt::format(".{}.{}-XXXXXX", target.filename().string(), tag)).string();
  if (!::mkdtemp(pattern.data())) {
    ThrowOutputError("cannot create a directory next to '{}': {}", target.string(),
                     std::strerror(errno));
  }
  return pattern;
}

}  // namespace

StagingDir::StagingDir(fs::path target, std::string_view format) : target_(std::move(target)) {
  target_ = target_.lexically_normal();
  if (target_.filename().empty()) target_ = target_.parent_path();
  if (target_.empty()) ThrowUsage("the output directory must not be empty");
  GuardOutput(target_);
  std::error_code ec;
  if (!target_.parent_path().empty()) fs::create_directories(target_.parent_path(), ec);
  path_ = MakeTempDirBeside(target_, "tmp");
  try {
    // Locked before it is marked: a directory with the marker and no lock is a dead run's.
    lock_ = DirLock(path_);
    WriteOutputMarker(path_, format);
  } catch (...) {
    fs::remove_all(path_, ec);
    throw;
  }
}

StagingDir::~StagingDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

fs::path StagingDir::Keep() {
  fs::path kept = path_;
  std::string name = kept.filename().string();
  name.replace(name.rfind(".tmp-"), 5, ".kept-");
  std::error_code ec;
  fs::rename(path_, kept.parent_path() / name, ec);
  if (!ec) kept = kept.parent_path() / name;
  path_.clear();
  lock_ = DirLock();
  return kept;
}

void StagingDir::Commit() {
  std::error_code ec;
  if (!fs::exists(target_, ec)) {
    ec = RenameOutput(path_, target_);
    if (ec) {
      ThrowOutputError("cannot move the output into '{}': {}", target_.string(), ec.message());
    }
    path_.clear();
    return;
  }
  // The previous output is locked while it is swapped out, so that another run does not take it
  // for a crashed run's leftover (best effort: a directory that cannot be opened is not locked).
  DirLock previous = DirLock::TryLock(target_);
  fs::path old = MakeTempDirBeside(target_, "old");
  fs::remove(old, ec);
  ec = RenameOutput(target_, old);
  if (ec) ThrowOutputError("cannot replace '{}': {}", target_.string(), ec.message());
  ec = RenameOutput(path_, target_);
  if (ec) {
    // Put the previous output back. If even that fails, keep it where it is and say where:
    // losing the user's last good output is worse than a stray directory.
    std::error_code restore_ec = RenameOutput(old, target_);
    if (restore_ec) {
      ThrowOutputError(
          "cannot move the output into '{}' ({}) nor restore the previous one ({}); the "
          "previous output is kept in '{}'",
          target_.string(), ec.message(), restore_ec.message(), old.string());
    }
    ThrowOutputError("cannot move the output into '{}': {}", target_.string(), ec.message());
  }
  path_.clear();
  fs::remove_all(old, ec);
}

}  // namespace porttool::io
