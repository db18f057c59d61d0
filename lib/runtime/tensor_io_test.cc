// The .npy and .pb readers on malformed and hostile files: every field of the header is what the
// file says, so a truncated header, a shape that is not a tuple, a shape whose byte size wraps or
// a claim larger than the file are bad input naming the file, decided before the claimed size is
// allocated.
#include "lib/runtime/tensor_io.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lib/runtime/resource_limits.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

using testing::TempDir;

std::string Npy(const std::string& header, const std::string& data = "") {
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string NpyError(const TempDir& dir, const std::string& bytes) {
  auto path = dir / "t.npy";
  testing::WriteFile(path, bytes);
  try {
    ReadNpy(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << bytes;
  return "";
}

TEST(NpyReader, MalformedHeadersAreBadInput) {
  TempDir dir;
  EXPECT_FALSE(NpyError(dir, Npy("{'shape'")).empty());
  EXPECT_FALSE(NpyError(dir, Npy("{'descr': '<f4', 'fortran_order': False, 'shape': 3 }")).empty());
  EXPECT_FALSE(NpyError(dir, Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2x,), }",
                                 std::string(8, '\0')))
                   .empty());
  EXPECT_FALSE(NpyError(dir, Npy("{'descr': '<f4")).empty());
  EXPECT_FALSE(NpyError(dir, "\x93NUMPY\x01").empty());
  // Found by fuzz_tensor_readers: a 'descr' with no value (or an unquoted, or an empty one) threw
  // std::out_of_range from substr instead of a bad-input error.
  for (const char* descr : {"", "x", "''", "'<'", "<f4"}) {
    std::string header =
        std::string("{'descr': ") + descr + ", 'fortran_order': False, 'shape': (4,), }";
    EXPECT_NE(NpyError(dir, Npy(header, std::string(4, '\0'))).find("dtype"), std::string::npos)
        << header;
  }
}

TEST(NpyReader, ClaimsLargerThanTheFileAreRefusedBeforeAllocating) {
  TempDir dir;
  const uint64_t live = LiveTensorBytes();
  auto msg = NpyError(
      dir, Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", "abcd"));
  EXPECT_NE(msg.find("claims 4398046511104 bytes"), std::string::npos) << msg;
  EXPECT_EQ(LiveTensorBytes(), live);
  auto wrap = NpyError(dir, Npy("{'descr': '<f8', 'fortran_order': False, "
                                "'shape': (4611686018427387904, 4), }",
                                std::string(8, '\0')));
  EXPECT_NE(wrap.find("2^63"), std::string::npos) << wrap;
  // Trailing bytes are as wrong as missing ones: the header does not describe the file.
  EXPECT_FALSE(NpyError(dir, Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                 std::string(8, '\0')))
                   .empty());
}

TEST(NpyReader, BoolBytesBecomeZeroOrOne) {
  TempDir dir;
  testing::WriteFile(dir / "b.npy", Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                        std::string("\x02\x00\x07", 3)));
  Tensor t = ReadNpy(dir / "b.npy");
  uint8_t raw[3];
  std::memcpy(raw, t.raw(), 3);
  EXPECT_EQ(raw[0], 1);
  EXPECT_EQ(raw[1], 0);
  EXPECT_EQ(raw[2], 1);
}

TEST(NpyReader, RoundTripStillWorks) {
  TempDir dir;
  Tensor t(onnx::TensorProto::FLOAT, {2, 3});
  for (int i = 0; i < 6; ++i) t.mutable_data<float>()[i] = static_cast<float>(i) * 1.5f;
  WriteNpy(dir / "r.npy", t);
  Tensor back = ReadNpy(dir / "r.npy");
  ASSERT_EQ(back.shape(), t.shape());
  EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.bytes()), 0);
}

TEST(PbReader, DimsWhoseProductWrapsAreBadInput) {
  TempDir dir;
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(int64_t{1} << 62);
  p.add_dims(4);  // 2^64 elements wraps to 0, which matched an empty raw_data before
  p.set_raw_data("");
  testing::WriteFile(dir / "t.pb", p.SerializeAsString());
  try {
    ReadPb(dir / "t.pb");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("2^63"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime
