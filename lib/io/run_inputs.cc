#include "lib/io/run_inputs.h"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "lib/io/atomic_file.h"

namespace porttool::io {
namespace fs = std::filesystem;

namespace {

using FileId = std::pair<dev_t, ino_t>;

struct Inputs {
  std::mutex mu;
  bool tracking = false;
  std::map<FileId, fs::path> files;  // the first path each input was read under
  std::set<FileId> replaceable;      // --in-place
};

Inputs& TheInputs() {
  static Inputs inputs;
  return inputs;
}

std::optional<FileId> IdOf(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The directories that hold `path`: its parents as spelled (each resolved by stat, so a
// symlinked folder counts as the folder) and as resolved (a symlinked file lives where it points).
std::set<FileId> FoldersHolding(const fs::path& path) {
  std::set<FileId> ids;
  std::error_code ec;
  for (fs::path spelled : {fs::absolute(path, ec).lexically_normal(), fs::canonical(path, ec)}) {
    if (spelled.empty()) continue;
    for (fs::path p = spelled.parent_path(); !p.empty(); p = p.parent_path()) {
      if (auto id = IdOf(p)) ids.insert(*id);
      if (p == p.root_path()) break;
    }
  }
  return ids;
}

}  // namespace

void TrackRunInputs() {
  Inputs& in = TheInputs();
  std::lock_guard<std::mutex> lock(in.mu);
  in.tracking = true;
  in.files.clear();
  in.replaceable.clear();
}

void NoteInput(const fs::path& path, dev_t device, ino_t inode) {
  Inputs& in = TheInputs();
  std::lock_guard<std::mutex> lock(in.mu);
  if (in.tracking) in.files.emplace(FileId{device, inode}, path);
}

void NoteInput(const fs::path& path) {
  if (auto id = IdOf(path)) NoteInput(path, id->first, id->second);
}

void AllowReplacingInput(const fs::path& path) {
  auto id = IdOf(path);
  if (!id) return;
  Inputs& in = TheInputs();
  std::lock_guard<std::mutex> lock(in.mu);
  in.replaceable.insert(*id);
}

std::optional<InputHit> InputAt(const fs::path& output, const fs::path& staged) {
  struct stat st {};
  if (output.empty() || ::stat(output.c_str(), &st) != 0) return std::nullopt;  // nothing there
  FileId id{st.st_dev, st.st_ino};
  if (!staged.empty() && IdOf(staged) == id) return std::nullopt;  // replaced by itself
  Inputs& in = TheInputs();
  std::lock_guard<std::mutex> lock(in.mu);
  if (in.replaceable.count(id)) return std::nullopt;
  // An input deleted since it was read (a scratch file) may have left its inode to a new file:
  // a note counts only while its path still names that inode.
  if (auto it = in.files.find(id); it != in.files.end() && IdOf(it->second) == id) {
    return InputHit{it->second, false};
  }
  if (!S_ISDIR(st.st_mode)) return std::nullopt;
  for (const auto& [input_id, path] : in.files) {
    if (in.replaceable.count(input_id) || IdOf(path) != input_id) continue;
    if (FoldersHolding(path).count(id)) return InputHit{path, true};
  }
  return std::nullopt;
}

void GuardOutput(const fs::path& output, const fs::path& staged) {
  auto hit = InputAt(output, staged);
  if (!hit) return;
  throw OutputError(
      ErrorKind::kUsage,
      fmt::format("refusing to write '{}': it {} '{}', an input of this run; "
                  "choose another output path",
                  output.string(), hit->inside ? "holds" : "is", hit->input.string()));
}

void ForgetInputsForTesting() {
  Inputs& in = TheInputs();
  std::lock_guard<std::mutex> lock(in.mu);
  in.tracking = false;
  in.files.clear();
  in.replaceable.clear();
}

}  // namespace porttool::io
