//===- Sha256.cpp - SHA-256 digest over OpenSSL's libcrypto ---------------===//
//
// The digest comes from libcrypto's EVP interface (Debian libssl-dev): a
// well-kept implementation that uses the CPU's SHA extensions or vector units
// where present, chosen at run time.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Sha256.h"

#include "tpu/isa/Error.h"

#include <openssl/evp.h>

namespace tpu::isa {

namespace {
[[noreturn]] void fail(const char *what) {
  throw Error(std::string("SHA-256: libcrypto ") + what + " failed");
}
} // namespace

void Sha256::FreeContext::operator()(EVP_MD_CTX *c) const {
  EVP_MD_CTX_free(c);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_)
    fail("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
    fail("EVP_DigestInit_ex");
}

void Sha256::update(const uint8_t *data, size_t size) {
  if (size != 0 && EVP_DigestUpdate(ctx_.get(), data, size) != 1)
    fail("EVP_DigestUpdate");
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest;
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &n) != 1 ||
      n != digest.size())
    fail("EVP_DigestFinal_ex");
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
