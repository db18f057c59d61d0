#include "lib/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
// sys/mman.h defines MAP_TYPE, an enumerator name in onnx/defs/parser.h; unused here, and in a
// unity batch it would break every later file that includes the parser.
#undef MAP_TYPE
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/io/input_file.h"
#include "lib/io/run_inputs.h"
#include "lib/util/error.h"

namespace porttool::io {

std::shared_ptr<const MappedFile> MappedFile::Open(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO would otherwise block the open until a writer comes.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) ThrowBadInput("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    ThrowBadInput("{}: {}, not a regular file", path.string(), FileKindName(st.st_mode));
  }
  NoteInput(path, st.st_dev, st.st_ino);
  const uint8_t* data = nullptr;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      ThrowBadInput("{}: cannot map: {}", path.string(), std::strerror(errno));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(new MappedFile(data, st.st_size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace porttool::io
