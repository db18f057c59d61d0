# ---- TFLite Micro adapter (tflm/) ----
set(TFLM_ROOT "" CACHE PATH "tflite-micro source tree (tensorflow/lite/micro)")
set(TFLM_EXTRA_INCLUDE_DIRS "" CACHE STRING "More include dirs for TFLM (flatbuffers, ...)")
if(TFLM_ROOT)
  if(NOT EXISTS ${TFLM_ROOT}/tensorflow/lite/micro/kernels/kernel_util.h)
    message(FATAL_ERROR "TFLM_ROOT=${TFLM_ROOT}: no tensorflow/lite/micro/kernels/kernel_util.h")
  endif()
  add_library({{sym}}_tflm STATIC tflm/{{sym}}_tflm.cc)
  target_include_directories({{sym}}_tflm PUBLIC tflm ${TFLM_ROOT}
    ${TFLM_ROOT}/tensorflow/lite/micro/tools/make/downloads/flatbuffers/include
    ${TFLM_EXTRA_INCLUDE_DIRS})
  target_link_libraries({{sym}}_tflm PUBLIC {{sym}}_kernel)
else()
  message(STATUS "TFLM_ROOT not set: tflm/ not built")
endif()
