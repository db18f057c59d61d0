# ONNX's CMake package for the aarch64 cross build (cmake/aarch64-linux-gnu.cmake points ONNX_DIR
# here). Debian's libonnx-dev:arm64 would provide it, but it cannot be installed beside the amd64
# libonnx-dev (both ship /usr/lib/libonnxifi.so), so this file defines the two targets porttool
# links, as Debian's ONNXTargets.cmake does (same definitions, same include directory), over the
# arm64 libonnx1 shared libraries (scripts/setup.sh --aarch64 installs libonnx1:arm64).
set(ONNX_VERSION "1.12.0")
set(ONNX_INCLUDE_DIRS /usr/include)
if(NOT EXISTS /usr/include/onnx/onnx_pb.h)
  set(ONNX_FOUND FALSE)
  set(ONNX_NOT_FOUND_MESSAGE "/usr/include/onnx/onnx_pb.h not found (apt-get install libonnx-dev)")
  return()
endif()
foreach(lib onnx onnx_proto)
  set(path /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/lib${lib}.so.1)
  if(NOT EXISTS ${path})
    set(ONNX_FOUND FALSE)
    set(ONNX_NOT_FOUND_MESSAGE "${path} not found (apt-get install libonnx1:arm64)")
    return()
  endif()
  if(NOT TARGET ${lib})
    add_library(${lib} SHARED IMPORTED)
    set_target_properties(${lib} PROPERTIES
      IMPORTED_LOCATION ${path}
      IMPORTED_SONAME lib${lib}.so.1
      INTERFACE_COMPILE_DEFINITIONS "ONNX_NAMESPACE=onnx;ONNX_ML=1"
      INTERFACE_INCLUDE_DIRECTORIES /usr/include)
  endif()
endforeach()
set_target_properties(onnx PROPERTIES INTERFACE_LINK_LIBRARIES onnx_proto)
set_target_properties(onnx_proto PROPERTIES INTERFACE_LINK_LIBRARIES protobuf::libprotobuf)
