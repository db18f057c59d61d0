// The one rule for a directory output (a port bundle, a split, a runner or custom-op package, a
// folder of test kits): porttool replaces an existing directory only when the user asked to, only
// when porttool wrote it (it holds the marker file below), and never when it holds an input of the
// run. `port -o proj --force` with the model in proj/ used to replace proj/, model included, and
// `-o testdata --force` removed a checkout's test data: a directory porttool did not write may
// hold anything, and a directory holding the input is the user's work.
//
// Every directory porttool writes carries the marker (StagingDir writes it), so the rule can tell
// its own outputs from the user's directories. The marker's content is fixed for a format, so a
// bundle stays byte-identical across runs.
//
// The same check clears what an interrupted run left beside the destination: a staging directory
// (`.<name>.tmp-XXXXXX`) or a swapped-out previous output (`.<name>.old-XXXXXX`) that is provably
// porttool's (the name pattern, the marker, and no live process holding its lock).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::io {

// The marker's file name, in every directory porttool writes.
inline constexpr char kOutputMarker[] = ".porttool-output";

// The marker's content for `format` ("port-bundle", "split", "runner", "custom-op", "kits"):
// deterministic, nothing that changes between runs.
std::string OutputMarkerText(std::string_view format);
// Writes the marker into `dir` (atomically).
void WriteOutputMarker(const std::filesystem::path& dir, std::string_view format);
// True when `dir` holds a marker written by WriteOutputMarker.
bool HasOutputMarker(const std::filesystem::path& dir);

struct OutputDirRequest {
  std::filesystem::path dir;
  // Every file or directory the run reads (data directories, facts, profiles, a loaded model's
  // ReferencedFiles): the output directory must not be one of them nor hold one.
  std::vector<std::filesystem::path> inputs{};
  // Model files not loaded yet: they and the external data files they reference count as inputs;
  // they are read only when `dir` exists (a directory that does not exist holds nothing).
  std::vector<std::filesystem::path> models{};
  bool replace = false;  // the user asked to replace an existing output directory
};

// The rule, checked before anything is written; Error(kUsage) naming the culprit otherwise:
//  1. `dir` is not an input, holds no input (at any depth, through symlinks too);
//  2. `dir` does not exist, or is an empty directory (nothing to lose), or is a directory holding
//     the marker and `replace` is set; a non-empty directory without the marker is never
//     replaced, whatever `replace` says.
// First, stale staging and swapped-out directories of an interrupted run beside `dir` are
// cleared (removed, or a swapped-out previous output put back when `dir` is missing), so that
// the rule judges what the user last had there.
void CheckOutputDir(const OutputDirRequest& request);

// Clears what interrupted runs left beside `target` (see above). Returns the paths removed or
// put back. CheckOutputDir calls it; exposed for tests.
std::vector<std::filesystem::path> ClearStaleStaging(const std::filesystem::path& target);

// An exclusive advisory lock (flock) on a directory, held while a run writes it: a staging
// directory whose lock can be taken belongs to no live process. Released on destruction (and by
// the kernel when the process dies).
class DirLock {
 public:
  DirLock() = default;
  // Blocks until the lock is held; Error(kBadInput) when `dir` cannot be opened.
  explicit DirLock(const std::filesystem::path& dir);
  ~DirLock();
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  // The lock on `dir` if no one holds it; an empty lock (held() false) otherwise.
  static DirLock TryLock(const std::filesystem::path& dir);
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace porttool::io
