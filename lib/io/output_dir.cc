#include "lib/io/output_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "lib/io/atomic_file.h"
#include "lib/io/model.h"
#include "lib/io/run_inputs.h"
#include "lib/util/error.h"

namespace porttool::io {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMarkerMagic = "porttool-output 1\n";

// `dir` without a trailing separator ("out/" and "out" name the same directory).
fs::path Normalized(const fs::path& dir) {
  fs::path n = dir.lexically_normal();
  if (n.filename().empty() && n.has_parent_path()) n = n.parent_path();
  return n;
}

fs::path Absolute(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return Normalized(ec ? p : a);
}

// Through symlinks, as far as the path exists.
fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? Absolute(p) : Normalized(c);
}

// `path` is `dir` or somewhere below it.
bool Within(const fs::path& path, const fs::path& dir) {
  auto [dir_end, path_end] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return dir_end == dir.end();
}

bool Holds(const fs::path& dir, const fs::path& input) {
  return Within(Absolute(input), Absolute(dir)) || Within(Resolved(input), Resolved(dir));
}

void RefuseIfHolds(const fs::path& dir, const fs::path& input) {
  if (!Holds(dir, input)) return;
  ThrowUsage(
      "the output directory '{}' {} '{}', an input of this run: porttool never writes over its "
      "input; choose another output directory",
      dir.string(), Within(Absolute(dir), Absolute(input)) ? "is" : "holds", input.string());
}

// The model file and the data files it references. A model that does not load counts as its
// file alone: the run's own load reports why it does not load.
std::vector<fs::path> ModelFiles(const fs::path& model) {
  try {
    return ReferencedFiles(Load(model));
  } catch (const Error&) {
    return {model};
  }
}

// ".<name>.<tag>-XXXXXX", as StagingDir names its directories (mkdtemp's six characters).
bool IsStagingName(const std::string& entry, const std::string& name, std::string_view tag) {
  const std::string prefix = "." + name + "." + std::string(tag) + "-";
  if (entry.size() != prefix.size() + 6 || entry.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(entry.begin() + prefix.size(), entry.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string OutputMarkerText(std::string_view format) {
  return fmt::format("{}format: {}\n", kMarkerMagic, format);
}

void WriteOutputMarker(const fs::path& dir, std::string_view format) {
  // A plain write: the directory is a staging directory nobody reads until it is committed.
  std::ofstream out(dir / kOutputMarker, std::ios::binary | std::ios::trunc);
  out << OutputMarkerText(format);
  out.close();
  if (!out) {
    ThrowOutputError("cannot write '{}': {}", (dir / kOutputMarker).string(), std::strerror(errno));
  }
}

bool HasOutputMarker(const fs::path& dir) {
  std::ifstream in(dir / kOutputMarker, std::ios::binary);
  std::string head(kMarkerMagic.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == kMarkerMagic;
}

DirLock::DirLock(const fs::path& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) ThrowOutputError("cannot open '{}': {}", dir.string(), std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

DirLock::DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirLock DirLock::TryLock(const fs::path& dir) {
  DirLock lock;
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return lock;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return lock;
  }
  lock.fd_ = fd;
  return lock;
}

std::vector<fs::path> ClearStaleStaging(const fs::path& target_in) {
  const fs::path target = Normalized(target_in);
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string name = target.filename().string();
  std::vector<fs::path> candidates;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (IsStagingName(entry, name, "tmp") || IsStagingName(entry, name, "old")) {
      candidates.push_back(it->path());
    }
  }
  std::sort(candidates.begin(), candidates.end());
  std::vector<fs::path> cleared;
  for (const auto& dir : candidates) {
    // Held by a live run, not a directory, or not provably porttool's: left alone. An empty
    // unmarked one may be a run that has just created it and not yet locked it.
    DirLock lock = DirLock::TryLock(dir);
    if (!lock.held() || !HasOutputMarker(dir)) continue;
    const bool swapped_out = IsStagingName(dir.filename().string(), name, "old");
    if (swapped_out && !fs::exists(target, ec)) {
      // The run died between moving the previous output aside and moving its own in: the
      // previous output goes back where the user left it.
      fs::rename(dir, target, ec);
      if (!ec) cleared.push_back(dir);
      continue;
    }
    fs::remove_all(dir, ec);
    if (!ec) cleared.push_back(dir);
  }
  return cleared;
}

void CheckOutputDir(const OutputDirRequest& request) {
  const fs::path dir = Normalized(request.dir);
  if (dir.empty()) ThrowUsage("the output directory must not be empty");
  ClearStaleStaging(dir);
  for (const auto& input : request.inputs) RefuseIfHolds(dir, input);
  for (const auto& model : request.models) RefuseIfHolds(dir, model);
  // The same by inode: a hard link to the model, or a folder reached another way.
  for (const auto& input : request.inputs) NoteInput(input);
  for (const auto& model : request.models) NoteInput(model);
  GuardOutput(dir);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) {
    ThrowUsage("'{}' exists and is not a directory; choose another output directory", dir.string());
  }
  for (const auto& model : request.models) {
    for (const auto& file : ModelFiles(model)) RefuseIfHolds(dir, file);
  }
  if (fs::is_empty(dir, ec)) return;
  if (!HasOutputMarker(dir)) {
    ThrowUsage(
        "'{}' exists and porttool did not write it (it holds no {} file): porttool replaces only "
        "a directory it wrote; choose another output directory, or empty this one yourself",
        dir.string(), kOutputMarker);
  }
  if (!request.replace) {
    ThrowUsage(
        "'{}' exists (an earlier porttool output); give another output directory, or "
        "replace it (force)",
        dir.string());
  }
}

}  // namespace porttool::io
