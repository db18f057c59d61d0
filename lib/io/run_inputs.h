// The inputs of this run and the one guard every output passes. Whatever porttool reads (models
// and their external data, samples, tables, profiles, facts, tensors, package directories) is
// noted here by device and inode as it is opened; whatever it writes (a file committed by
// AtomicFile/OutputSet, a directory by StagingDir or CreateOutputDir) is checked against those
// notes before it replaces anything. Spelling does not matter: `./m.onnx`, `../d/m.onnx`, a
// symlink or a hard link to the model all name the same inode. The hostile round found
// `quantize-calibrate M --data D --table M` overwriting the model with the JSON table, exit 0:
// each output had its own (or no) check; now there is this one.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <vector>

namespace porttool::io {

// Starts noting inputs: the CLI calls it once per process, before the subcommand runs. Until
// then NoteInput does nothing, so library code run by tests in one long process (which read and
// rewrite the same scratch files freely) is not judged as one run. Clears earlier notes.
void TrackRunInputs();

// Notes a file or directory this run reads. A path that cannot be stat'ed is ignored (the read
// itself reports it). Thread-safe: samples are read in parallel.
void NoteInput(const std::filesystem::path& path);
// The same for an open file (fstat of the descriptor that is read, not of a path that may have
// changed since).
void NoteInput(const std::filesystem::path& path, dev_t device, ino_t inode);

// `--in-place`: the user allows this input to be replaced by an output.
void AllowReplacingInput(const std::filesystem::path& path);

// The input `output` would destroy: `output` resolves to a noted input, or is a directory that
// holds one (at any depth). `staged` is the file about to be renamed onto `output`, if any: when
// it is the same inode as `output` (a hard link to the same data), replacing changes nothing.
// Returns the input's path and whether `output` holds it (rather than is it).
struct InputHit {
  std::filesystem::path input;
  bool inside = false;
};
std::optional<InputHit> InputAt(const std::filesystem::path& output,
                                const std::filesystem::path& staged = {});

// Throws OutputError of kind kUsage (exit 2) naming the output and the input when InputAt finds
// one. Every output calls it before it replaces anything.
void GuardOutput(const std::filesystem::path& output, const std::filesystem::path& staged = {});

// Stops tracking and forgets every note (tests).
void ForgetInputsForTesting();

}  // namespace porttool::io
