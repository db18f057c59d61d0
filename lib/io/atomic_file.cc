#include "lib/io/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "lib/io/run_inputs.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::io {
namespace fs = std::filesystem;

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
  fs::path dir = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
  std::string tmpl = (dir / fmt::format(".{}.tmp-XXXXXX", target_.filename().string())).string();
  fd_ = ::mkstemp(tmpl.data());
  if (fd_ < 0) {
    ThrowOutputError("cannot write '{}': {}", target_.string(), std::strerror(errno));
  }
  ::fchmod(fd_, 0644);
  temp_ = tmpl;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!renamed_) ::unlink(temp_.c_str());
}

void AtomicFile::Write(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowOutputError("writing '{}' failed: {}", target_.string(), std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

bool AtomicFile::LinkOrCopyFrom(const fs::path& source) {
  ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  if (::link(source.c_str(), temp_.c_str()) == 0) return false;
  std::error_code ec;
  fs::copy_file(source, temp_, ec);
  if (ec) {
    ThrowOutputError("cannot link or copy '{}' to '{}': {}", source.string(), target_.string(),
                     ec.message());
  }
  // A copy is new data: Finish() flushes it like written content.
  fd_ = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  return true;
}

void AtomicFile::Finish() {
  if (fd_ < 0) return;
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ThrowOutputError("writing '{}' failed: {}", target_.string(), std::strerror(err));
  }
  if (::close(fd) != 0) {
    ThrowOutputError("writing '{}' failed: {}", target_.string(), std::strerror(errno));
  }
}

void AtomicFile::Commit() { CommitAll({this}); }

void WriteFileAtomic(const fs::path& path, std::string_view content) {
  AtomicFile file(path);
  file.Write(content);
  file.Commit();
}

namespace {

std::atomic<int> g_fail_rename_at{0};
std::atomic<int> g_renames{0};

// A free name `.<target name>.old-XXXXXX` beside `target`, for keeping its previous version.
fs::path KeepNameBeside(const fs::path& target) {
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmpl = (dir / fmt::format(".{}.old-XXXXXX", target.filename().string())).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    ThrowOutputError("cannot keep the previous '{}': {}", target.string(), std::strerror(errno));
  }
  ::close(fd);
  return tmpl;
}

// One file of a CommitAll and what it takes to put its target back.
struct PendingRename {
  AtomicFile* file;
  fs::path kept;             // the target's previous version; empty when there was none
  bool moved_aside = false;  // kept by renaming the target away (no hard link possible)
  bool renamed = false;      // the new file is on the target
};

// Keeps the previous version of `p.file`'s target, if there is one. Returns an error message, or
// "" on success.
std::string KeepPrevious(PendingRename& p) {
  const fs::path& target = p.file->target();
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) return "";  // nothing to keep
  if (S_ISDIR(st.st_mode))
    return fmt::format("cannot write '{}': it is a directory", target.string());
  try {
    p.kept = KeepNameBeside(target);
  } catch (const Error& e) {
    return e.what();
  }
  // A hard link keeps the target in place until the new file replaces it in one rename.
  ::unlink(p.kept.c_str());
  if (::link(target.c_str(), p.kept.c_str()) == 0) return "";
  std::error_code ec = RenameOutput(target, p.kept);
  if (!ec) {
    p.moved_aside = true;
    return "";
  }
  ::unlink(p.kept.c_str());
  p.kept.clear();
  return fmt::format("cannot keep the previous '{}': {}", target.string(), ec.message());
}

// Puts every target of `pending` back as it was; returns what could not be put back.
std::vector<std::string> UndoRenames(std::vector<PendingRename>& pending) {
  std::vector<std::string> problems;
  for (auto p = pending.rbegin(); p != pending.rend(); ++p) {
    const fs::path& target = p->file->target();
    if (!p->renamed && !p->moved_aside) {
      if (!p->kept.empty()) ::unlink(p->kept.c_str());
      continue;
    }
    if (!p->kept.empty()) {
      if (std::error_code ec = RenameOutput(p->kept, target)) {
        problems.push_back(fmt::format("the previous '{}' is kept in '{}' ({})", target.string(),
                                       p->kept.string(), ec.message()));
      }
    } else if (::unlink(target.c_str()) != 0 && errno != ENOENT) {
      problems.push_back(
          fmt::format("'{}' could not be removed ({})", target.string(), std::strerror(errno)));
    }
  }
  return problems;
}

}  // namespace

std::error_code RenameOutput(const fs::path& from, const fs::path& to) {
  int nth = g_fail_rename_at.load();
  if (nth > 0 && g_renames.fetch_add(1) + 1 == nth) {
    return std::error_code(EIO, std::generic_category());
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return std::error_code(errno, std::generic_category());
  }
  return {};
}

void SetRenameFaultForTesting(int nth) {
  g_renames = 0;
  g_fail_rename_at = nth;
}

void CommitAll(const std::vector<AtomicFile*>& files) {
  for (AtomicFile* f : files) f->Finish();
  // The last word before anything is replaced: every input of the run is noted by now.
  for (AtomicFile* f : files) GuardOutput(f->target_, f->temp_);
  // One file: its rename alone is atomic, there is nothing to undo.
  if (files.size() == 1) {
    AtomicFile& f = *files[0];
    if (std::error_code ec = RenameOutput(f.temp_, f.target_)) {
      ThrowOutputError("cannot rename onto '{}': {}", f.target_.string(), ec.message());
    }
    f.renamed_ = true;
    return;
  }
  std::vector<PendingRename> pending;
  std::string failure;
  for (AtomicFile* f : files) {
    pending.push_back({f, {}, false, false});
    failure = KeepPrevious(pending.back());
    if (!failure.empty()) break;
  }
  if (failure.empty()) {
    for (PendingRename& p : pending) {
      AtomicFile& f = *p.file;
      if (std::error_code ec = RenameOutput(f.temp_, f.target_)) {
        failure = fmt::format("cannot rename onto '{}': {}", f.target_.string(), ec.message());
        break;
      }
      f.renamed_ = true;
      p.renamed = true;
    }
  }
  if (!failure.empty()) {
    std::vector<std::string> problems = UndoRenames(pending);
    if (problems.empty()) {
      ThrowOutputError("{}; no output was written or changed", failure);
    }
    ThrowOutputError("{}; putting the other outputs back failed: {}", failure,
                     util::Join(problems, "; "));
  }
  for (const PendingRename& p : pending) {
    if (!p.kept.empty()) ::unlink(p.kept.c_str());
  }
}

AtomicFile& OutputSet::Add(fs::path target) {
  files_.push_back(std::make_unique<AtomicFile>(std::move(target)));
  return *files_.back();
}

void OutputSet::Commit() {
  std::vector<AtomicFile*> all;
  for (auto& f : files_) all.push_back(f.get());
  CommitAll(all);
}

void CheckOutputFilePath(const fs::path& path) {
  GuardOutput(path);
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
  GuardOutput(dir);
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
