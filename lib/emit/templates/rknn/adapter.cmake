# ---- RKNN adapter (rknn/) ----
set(RKNN_SDK_ROOT "" CACHE PATH "RKNN runtime SDK root (rknn_api.h, rknn_custom_op.h, librknnrt.so)")
if(RKNN_SDK_ROOT)
  find_path(PT_RKNN_INCLUDE_DIR rknn_custom_op.h
    PATHS ${RKNN_SDK_ROOT}/include ${RKNN_SDK_ROOT}/runtime/Linux/librknn_api/include
    NO_DEFAULT_PATH)
  find_library(PT_RKNN_LIBRARY rknnrt
    PATHS ${RKNN_SDK_ROOT}/lib ${RKNN_SDK_ROOT}/aarch64 ${RKNN_SDK_ROOT}/armhf
          ${RKNN_SDK_ROOT}/runtime/Linux/librknn_api/aarch64
    NO_DEFAULT_PATH)
  if(NOT PT_RKNN_INCLUDE_DIR OR NOT PT_RKNN_LIBRARY)
    message(FATAL_ERROR "RKNN_SDK_ROOT=${RKNN_SDK_ROOT}: rknn_custom_op.h or librknnrt.so not found")
  endif()
  add_library({{sym}}_rknn STATIC rknn/{{sym}}_rknn.c)
  target_include_directories({{sym}}_rknn PUBLIC rknn ${PT_RKNN_INCLUDE_DIR})
  target_link_libraries({{sym}}_rknn PUBLIC {{sym}}_kernel ${PT_RKNN_LIBRARY})
  add_library(rkcst_{{sym}} SHARED rknn/librkcst_{{sym}}.c)  # librkcst_{{sym}}.so
  target_link_libraries(rkcst_{{sym}} PRIVATE {{sym}}_rknn)
else()
  message(STATUS "RKNN_SDK_ROOT not set: rknn/ not built")
endif()
