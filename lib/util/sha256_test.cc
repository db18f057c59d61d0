// SHA-256 against the FIPS 180-2 vectors, whichever block function the CPU gets (the SHA
// extensions or the portable rounds), and streamed in uneven pieces as files are.
#include "lib/util/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace porttool::util {
namespace {

std::string Hex(const std::string& bytes) {
  Sha256 sha;
  sha.Update({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return sha.HexDigest();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Pieces that straddle block boundaries go through the partial-block buffer and the whole-block
// path in turn: the digest is the one-piece digest.
TEST(Sha256, StreamedInUnevenPiecesIsTheWholeDigest) {
  std::mt19937 rng(1);
  std::string bytes(100003, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  Sha256 sha;
  for (size_t i = 0; i < bytes.size();) {
    size_t n = std::min<size_t>(bytes.size() - i, 1 + rng() % 300);
    sha.Update({reinterpret_cast<const uint8_t*>(bytes.data()) + i, n});
    i += n;
  }
  EXPECT_EQ(sha.HexDigest(), Hex(bytes));
  EXPECT_EQ(Hex(bytes), "20cf79fa8323423e7d32e9872018dfdbdba5dcbf0cf7dda538df23abc3abf187");
}

}  // namespace
}  // namespace porttool::util
