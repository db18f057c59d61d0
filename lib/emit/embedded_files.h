// Files that porttool_emit carries as text, embedded at configure time by porttool_embed_files()
// (CMakeLists.txt) so that an installed binary needs none of the source tree. Each set is kept in
// the tree as what it is (C, C++, Python, CMake, Markdown), where it can be highlighted, linted
// and compiled; editing a file re-runs the embedding. Paths are relative to the set's folder,
// '/'-separated.
#pragma once

#include <span>
#include <string_view>

namespace porttool::emit {

struct EmbeddedFile {
  std::string_view path;  // e.g. "op/kernel.h"
  std::string_view text;  // the file's bytes, unchanged
};

// The text of `path` in `files`. A path not embedded is porttool's bug (a typo in the code, or a
// file missing from the set), so InternalError naming the set and the path.
std::string_view FindEmbeddedFile(std::span<const EmbeddedFile> files, std::string_view path,
                                  std::string_view set);

// ---- the sets (generated definitions: build/embedded/<function>.cc) ----

// scaffold-op's templates, lib/emit/templates/<group>/... ("op/kernel.h", "ort/adapter.cc"),
// filled with FillTemplate (scaffold_adapters.h).
std::string_view Template(std::string_view relative_path);

// The generated runner's static C files, lib/emit/runner_c/ ("pl_layout.c"), copied as they are.
std::span<const EmbeddedFile> RunnerSources();

// Files of lib/runtime that a generated package ships verbatim: "custom_op_abi.h", the custom-op
// ABI, as kernel/porttool_custom_op.h.
std::string_view RuntimeFile(std::string_view relative_path);

}  // namespace porttool::emit
