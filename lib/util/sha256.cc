#include "lib/util/sha256.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "lib/util/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace porttool::util {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#if defined(__x86_64__)

// The SHA extensions (SHA-NI) hash 3-4x faster than the portable rounds: port hashes the source
// and every segment it writes, several times a model's size, and the portable code took more of
// a port's time than one inference of the model (issue 49).
bool HasShaExtensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3 && sse41 && (b & (1u << 29));
}

// `n` blocks with the SHA extensions (Intel's formulation: the state as ABEF/CDGH, two rounds per
// sha256rnds2, the schedule from sha256msg1/msg2 over a ring of four message vectors).
__attribute__((target("sha,sse4.1,ssse3"))) void ShaNiBlocks(uint32_t* h, const uint8_t* p,
                                                             size_t n) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);
  __m128i state1 =
      _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);  // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);       // CDGH
  for (; n > 0; --n, p += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i m[4];
    for (int j = 0; j < 16; ++j) {
      if (j < 4) {
        m[j] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * j)),
                                kByteSwap);
      } else {
        __m128i x = _mm_sha256msg1_epu32(m[j % 4], m[(j + 1) % 4]);  // w[t-16], w[t-15]
        x = _mm_add_epi32(x, _mm_alignr_epi8(m[(j + 3) % 4], m[(j + 2) % 4], 4));  // w[t-7]
        m[j % 4] = _mm_sha256msg2_epu32(x, m[(j + 3) % 4]);                        // w[t-2]
      }
      __m128i wk =
          _mm_add_epi32(m[j % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * j)));
      state1 = _mm_sha256rnds2_epu32(state1, state0, wk);
      state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(wk, 0x0E));
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);        // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);     // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);     // ABEF
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), state1);
}

#endif

}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::Block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
           (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 =
        h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::Blocks(const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  static const bool kShaExtensions = HasShaExtensions();
  if (kShaExtensions) return ShaNiBlocks(h_.data(), p, n);
#endif
  for (; n > 0; --n, p += 64) Block(p);
}

void Sha256::Update(std::span<const uint8_t> data) {
  total_ += data.size();
  size_t i = 0;
  if (buf_len_) {
    size_t take = std::min(data.size(), 64 - buf_len_);
    std::memcpy(buf_.data() + buf_len_, data.data(), take);
    buf_len_ += take;
    i = take;
    if (buf_len_ < 64) return;
    Blocks(buf_.data(), 1);
    buf_len_ = 0;
  }
  const size_t whole = (data.size() - i) / 64;
  Blocks(data.data() + i, whole);
  i += whole * 64;
  buf_len_ = data.size() - i;
  if (buf_len_) std::memcpy(buf_.data(), data.data() + i, buf_len_);
}

std::string Sha256::HexDigest() {
  uint64_t bits = total_ * 8;
  uint8_t pad[72] = {0x80};
  size_t pad_len = (buf_len_ < 56 ? 56 : 120) - buf_len_;
  for (int i = 0; i < 8; ++i) pad[pad_len + i] = uint8_t(bits >> (56 - 8 * i));
  uint64_t saved = total_;
  Update({pad, pad_len + 8});
  total_ = saved;
  std::string out;
  for (uint32_t v : h_) out += fmt::format("{:08x}", v);
  return out;
}

std::string Sha256File(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowBadInput("{}: cannot open for hashing: {}", path.string(), std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  Sha256 sha;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      ThrowBadInput("{}: cannot map for hashing", path.string());
    }
    ::madvise(p, st.st_size, MADV_SEQUENTIAL);
    // Hash in windows and drop pages behind us so RSS stays flat on multi-GB files.
    const size_t kWindow = 64 << 20;
    auto* bytes = static_cast<const uint8_t*>(p);
    for (size_t off = 0; off < size_t(st.st_size); off += kWindow) {
      size_t n = std::min(kWindow, size_t(st.st_size) - off);
      sha.Update({bytes + off, n});
      ::madvise(const_cast<uint8_t*>(bytes + off), n, MADV_DONTNEED);
    }
    ::munmap(p, st.st_size);
  }
  ::close(fd);
  return sha.HexDigest();
}

}  // namespace porttool::util
