# ---- ONNX Runtime adapter (ort/) ----
set(ONNXRUNTIME_ROOT "" CACHE PATH "ONNX Runtime SDK root (include/onnxruntime_c_api.h)")
if(ONNXRUNTIME_ROOT)
  find_path(PT_ORT_INCLUDE_DIR onnxruntime_c_api.h
    PATHS ${ONNXRUNTIME_ROOT}/include ${ONNXRUNTIME_ROOT}/include/onnxruntime
          ${ONNXRUNTIME_ROOT}/include/onnxruntime/core/session
    NO_DEFAULT_PATH)
  if(NOT PT_ORT_INCLUDE_DIR)
    message(FATAL_ERROR "ONNXRUNTIME_ROOT=${ONNXRUNTIME_ROOT} has no include/onnxruntime_c_api.h")
  endif()
  add_library({{sym}}_ort SHARED ort/{{sym}}_ort.cc)
  target_include_directories({{sym}}_ort PRIVATE ${PT_ORT_INCLUDE_DIR})
  target_link_libraries({{sym}}_ort PRIVATE {{sym}}_kernel)
  set_target_properties({{sym}}_ort PROPERTIES CXX_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ort/exports.lds)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" OR CMAKE_SYSTEM_NAME STREQUAL "Android")
    target_link_options({{sym}}_ort PRIVATE
      "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/ort/exports.lds")
  endif()
else()
  # No SDK: compile the adapter against porttool's stub of the C API (no library is built).
  add_library({{sym}}_ort_stub_check OBJECT ort/{{sym}}_ort.cc)
  target_include_directories({{sym}}_ort_stub_check PRIVATE ort/stub kernel)
  target_compile_definitions({{sym}}_ort_stub_check PRIVATE PT_ORT_STUB_COMPILE_ONLY)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options({{sym}}_ort_stub_check PRIVATE -Wall -Wextra -Werror)
  endif()
  message(STATUS "ONNXRUNTIME_ROOT not set: ort/{{sym}}_ort.cc is compile-checked against ort/stub")
endif()
