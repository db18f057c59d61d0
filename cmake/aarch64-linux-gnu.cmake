# Cross toolchain for aarch64 Linux with Debian's g++-aarch64-linux-gnu, the binaries run under
# qemu-user-static (scripts/test-aarch64.sh; scripts/setup.sh --aarch64 installs all of it):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DPORTTOOL_RUNTIME_ONLY=ON
# Libraries come from two places: the cross compiler's own libc/libstdc++ under
# /usr/aarch64-linux-gnu, and Debian's :arm64 multiarch packages (libprotobuf, libfmt, gtest,
# ...) under /usr/lib/aarch64-linux-gnu with their headers in /usr/include, shared with
# the host. Programs (protoc) are the host's: the amd64 protobuf-compiler is the same version as
# the arm64 libprotobuf.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: find_library and find_package look in <prefix>/lib/aarch64-linux-gnu, never in
# /usr/lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# "/" is a root too, so that /usr/lib/aarch64-linux-gnu and /usr/include (the :arm64 packages)
# are searched; the library architecture above keeps the host's libraries out.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Debian's libonnx-dev:arm64 cannot be installed beside the amd64 one (both ship
# /usr/lib/libonnxifi.so, outside the multiarch directory), so ONNX's CMake package comes from
# cmake/aarch64/: the arm64 libonnx1 libraries with the headers of the amd64 libonnx-dev
# (architecture-independent: the same generated onnx-ml.pb.h for the same protobuf version).
set(ONNX_DIR ${CMAKE_CURRENT_LIST_DIR}/aarch64)
# try_run, add_custom_command(COMMAND <target>) and ctest run aarch64 programs through qemu, with
# Debian's arm64 multiarch loader and libraries (libc6:arm64 comes with the :arm64 packages), as
# on a board. Not -L /usr/aarch64-linux-gnu: the cross compiler's loader there would run with the
# multiarch libc.so.6 of another glibc build, and the runtime suite hangs in its start-up.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
