# {{domain|line_comment}}::{{Op|line_comment}} custom-op package, scaffolded by porttool scaffold-op from node {{node|line_comment}} of
# {{model|line_comment}} (sha256 {{sha256}}). The kernel, the porttool ABI library and the kit tests always
# build; the ONNX schema builds when libonnx is found.
cmake_minimum_required(VERSION 3.16)
project(porttool_{{sym}} C CXX)
set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_C_VISIBILITY_PRESET hidden)
enable_testing()

add_library({{sym}}_kernel STATIC kernel/{{sym}}.c)
target_include_directories({{sym}}_kernel PUBLIC kernel)
find_library(PT_LIBM m)
if(PT_LIBM)
  target_link_libraries({{sym}}_kernel PUBLIC ${PT_LIBM})
endif()

# libporttool_{{sym}}.so: `porttool run|compare|check ... --custom-op <this dir>` loads it.
add_library(porttool_{{sym}} SHARED kernel/{{sym}}_porttool.c)
target_link_libraries(porttool_{{sym}} PRIVATE {{sym}}_kernel)

add_executable({{sym}}_test test/{{sym}}_test.c)
target_link_libraries({{sym}}_test PRIVATE {{sym}}_kernel)
add_test(NAME {{sym}}_kit COMMAND {{sym}}_test)
add_executable({{sym}}_test_scalar test/{{sym}}_test.c kernel/{{sym}}.c)
target_include_directories({{sym}}_test_scalar PRIVATE kernel)
target_compile_definitions({{sym}}_test_scalar PRIVATE PT_NO_SIMD)
if(PT_LIBM)
  target_link_libraries({{sym}}_test_scalar PRIVATE ${PT_LIBM})
endif()
add_test(NAME {{sym}}_kit_scalar COMMAND {{sym}}_test_scalar)

find_package(ONNX QUIET)
if(ONNX_FOUND OR TARGET onnx)
  find_package(Protobuf REQUIRED)
  add_executable({{sym}}_schema_test schema/{{sym}}_schema.cc schema/{{sym}}_schema_test.cc)
  target_link_libraries({{sym}}_schema_test PRIVATE onnx onnx_proto protobuf::libprotobuf)
  add_test(NAME {{sym}}_schema COMMAND {{sym}}_schema_test)
else()
  message(STATUS "libonnx not found: schema/{{sym}}_schema.cc not built")
endif()
