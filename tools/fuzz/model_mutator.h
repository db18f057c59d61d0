// A structure-aware mutator for the model targets: byte mutations rarely get past protobuf
// parsing with a model that still means something, so most mutations parse the input as a
// ModelProto, change what the stages interpret (attribute values and types, dims, dtypes, node
// wiring, op types, opsets, node order) and serialize it again. A quarter of the calls, and every
// input that does not parse, fall back to libFuzzer's byte mutations, which keep protobuf parsing
// itself fuzzed. PORTTOOL_FUZZ_BYTES_ONLY=1 in the environment turns the structure off (to
// measure the coverage it adds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace porttool::fuzz {

// 1-3 structural mutations of the serialized model `bytes`, chosen by `seed`; nullopt when the
// bytes are not a ModelProto.
std::optional<std::string> MutateModelBytes(std::string_view bytes, uint32_t seed);

using ByteMutator = size_t (*)(uint8_t* data, size_t size, size_t max_size);

// libFuzzer's custom-mutator contract over a target whose first `prefix` bytes are selectors
// (kept, or one of them changed) and whose rest is a model.
size_t MutateModelInput(uint8_t* data, size_t size, size_t max_size, unsigned seed, size_t prefix,
                        ByteMutator byte_mutate);

}  // namespace porttool::fuzz

// Defines LLVMFuzzerCustomMutator for a model target (in its fuzz_<name>.cc only).
#define PORTTOOL_FUZZ_MODEL_MUTATOR(PREFIX_BYTES)                                        \
  extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);       \
  extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, \
                                            unsigned seed) {                             \
    return porttool::fuzz::MutateModelInput(data, size, max_size, seed, PREFIX_BYTES,    \
                                            &LLVMFuzzerMutate);                          \
  }
