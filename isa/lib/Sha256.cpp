//===- Sha256.cpp - SHA-256 digest (FIPS 180-4) ---------------------------===//
//
// A straightforward implementation of FIPS 180-4 section 6.2: 512-bit blocks,
// 64 rounds, big-endian words, length padding.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Sha256.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define TPU_SHA_NI 1
#else
#define TPU_SHA_NI 0
#endif

namespace tpu::isa {

namespace {

/// FIPS 180-4 4.2.2: first 32 bits of the fractional parts of the cube roots
/// of the first 64 primes.
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

/// FIPS 180-4 5.3.3: first 32 bits of the fractional parts of the square
/// roots of the first 8 primes.
constexpr std::array<uint32_t, 8> kInitialState = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr int kRounds = 64;
constexpr int kScheduleInit = 16; // words taken straight from the block
/// The message length is appended as a 64-bit big-endian number.
constexpr size_t kLengthBytes = 8;

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

uint32_t loadBigEndian32(const uint8_t *p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
         (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

#if TPU_SHA_NI
/// The same compression with the x86 SHA extensions (sha256rnds2 does two
/// rounds on the state held as ABEF / CDGH; sha256msg1/2 extend the
/// schedule four words at a time). Chosen at run time when the CPU has
/// them and TPU_SHA256_PORTABLE is unset; the unit test hashes with both.
__attribute__((target("sha,sse4.1,ssse3"))) void
compressShaNi(uint32_t *state, const uint8_t *block) {
  const __m128i byteSwap =
      _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state));
  __m128i hgfe =
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(state + 4));
  __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  __m128i abefSave = abef, cdghSave = cdgh;
  __m128i msg[4];
  for (int i = 0; i < 4; ++i)
    msg[i] = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 16 * i)),
        byteSwap);
  for (int i = 0; i < kRounds / 4; ++i) {
    __m128i w = msg[i % 4];
    if (i >= 4) {
      // W[4i..4i+3] from W[4i-16..4i-1]: msg[i % 4] holds W[4i-16..].
      __m128i prev1 = msg[(i + 3) % 4], prev2 = msg[(i + 2) % 4];
      __m128i t = _mm_sha256msg1_epu32(msg[i % 4], msg[(i + 1) % 4]);
      t = _mm_add_epi32(t, _mm_alignr_epi8(prev1, prev2, 4));
      w = _mm_sha256msg2_epu32(t, prev1);
      msg[i % 4] = w;
    }
    __m128i wk = _mm_add_epi32(
        w, _mm_loadu_si128(
               reinterpret_cast<const __m128i *>(kRoundConstants + 4 * i)));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
  }
  abef = _mm_add_epi32(abef, abefSave);
  cdgh = _mm_add_epi32(cdgh, cdghSave);
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(state), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(state + 4), hgfe);
}

bool useShaNi() {
  static const bool use = [] {
    const char *env = std::getenv("TPU_SHA256_PORTABLE");
    return __builtin_cpu_supports("sha") && !(env && *env);
  }();
  return use;
}
#endif

} // namespace

Sha256::Sha256() : state(kInitialState) {}

void Sha256::compress(const uint8_t *block) {
#if TPU_SHA_NI
  if (useShaNi()) {
    compressShaNi(state.data(), block);
    return;
  }
#endif
  uint32_t w[kRounds];
  for (int t = 0; t < kScheduleInit; ++t)
    w[t] = loadBigEndian32(block + 4 * t);
  for (int t = kScheduleInit; t < kRounds; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < kRounds; ++t) {
    uint32_t bigSigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t t1 = h + bigSigma1 + choose + kRoundConstants[t] + w[t];
    uint32_t bigSigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = bigSigma0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

void Sha256::update(const uint8_t *data, size_t size) {
  totalBytes += size;
  if (buffered > 0) {
    size_t take = std::min(size, kBlockSize - buffered);
    std::memcpy(buffer.data() + buffered, data, take);
    buffered += take;
    data += take;
    size -= take;
    if (buffered < kBlockSize)
      return;
    compress(buffer.data());
    buffered = 0;
  }
  for (; size >= kBlockSize; data += kBlockSize, size -= kBlockSize)
    compress(data);
  if (size > 0) {
    std::memcpy(buffer.data(), data, size);
    buffered = size;
  }
}

Sha256Digest Sha256::finish() {
  constexpr uint8_t kPadStart = 0x80; // a single 1 bit, then zeros
  uint64_t bitLength = totalBytes * 8;
  buffer[buffered++] = kPadStart;
  if (buffered > kBlockSize - kLengthBytes) {
    std::memset(buffer.data() + buffered, 0, kBlockSize - buffered);
    compress(buffer.data());
    buffered = 0;
  }
  std::memset(buffer.data() + buffered, 0, kBlockSize - buffered);
  for (size_t i = 0; i < kLengthBytes; ++i)
    buffer[kBlockSize - 1 - i] = uint8_t(bitLength >> (8 * i));
  compress(buffer.data());
  Sha256Digest digest;
  for (size_t i = 0; i < state.size(); ++i)
    for (int j = 0; j < 4; ++j)
      digest[4 * i + j] = uint8_t(state[i] >> (24 - 8 * j));
  return digest;
}

Sha256Digest sha256(const uint8_t *data, size_t size) {
  Sha256 hasher;
  hasher.update(data, size);
  return hasher.finish();
}

std::string hexString(const uint8_t *data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xF]);
  }
  return out;
}

} // namespace tpu::isa
