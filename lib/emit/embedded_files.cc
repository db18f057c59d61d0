// Lookup in the embedded file sets of embedded_files.h.
#include "lib/emit/embedded_files.h"

#include "lib/util/error.h"

namespace porttool::emit {

std::string_view FindEmbeddedFile(std::span<const EmbeddedFile> files, std::string_view path,
                                  std::string_view set) {
  // A linear scan: a few dozen entries, looked up a few times per command; no ordering to keep.
  for (const auto& f : files) {
    if (f.path == path) return f.text;
  }
  ThrowInternal(
      "no file '{}' among the embedded {} ({} files): a name in porttool's code does not "
      "match a file of the set",
      path, set, files.size());
}

}  // namespace porttool::emit
