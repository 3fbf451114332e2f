//===- Sha256Test.cpp - SHA-256 against the FIPS 180-2 vectors ------------===//
//
// Expected digests are the published examples of FIPS 180-2 (appendix B):
// "abc", the 448-bit two-block message and one million 'a'.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace tpu::isa;

namespace {

std::string digestOf(const std::string &s) {
  return hexString(
      sha256(reinterpret_cast<const uint8_t *>(s.data()), s.size()));
}

TEST(Sha256, Fips180Abc) {
  EXPECT_EQ(digestOf("abc"), "ba7816bf8f01cfea414140de5dae2223"
                             "b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, Fips180TwoBlockMessage) {
  EXPECT_EQ(
      digestOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, Fips180MillionA) {
  std::string a(1000000, 'a');
  EXPECT_EQ(digestOf(a), "cdc76e5c9914fb9281a1c7e284d73e67"
                         "f1809a48a497200e046d39ccc7112cd0");
  // The same digest fed in uneven pieces through the incremental API.
  Sha256 hasher;
  const auto *p = reinterpret_cast<const uint8_t *>(a.data());
  size_t done = 0;
  for (size_t piece = 1; done < a.size(); piece = piece * 3 + 1) {
    size_t n = std::min(piece, a.size() - done);
    hasher.update(p + done, n);
    done += n;
  }
  EXPECT_EQ(hexString(hasher.finish()), digestOf(a));
}

TEST(Sha256, EmptyMessage) {
  // SHA-256("") from FIPS 180-4 example set (NIST CSRC examples).
  EXPECT_EQ(digestOf(""), "e3b0c44298fc1c149afbf4c8996fb924"
                          "27ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, HexString) {
  const uint8_t bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  EXPECT_EQ(hexString(bytes, sizeof bytes), "000fa5ff");
}

} // namespace
