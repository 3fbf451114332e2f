//===- Sha256.h - SHA-256 digest (FIPS 180-4) --------------------*- C++
//-*-===//
//
// SHA-256 for the bmodel's coefficient `check_code` (isa/docs/bm1684x.md 7.2),
// computed by OpenSSL's libcrypto.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_SHA256_H
#define TPU_ISA_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct evp_md_ctx_st; // OpenSSL's EVP_MD_CTX

namespace tpu::isa {

/// Size of a SHA-256 digest in bytes.
constexpr size_t kSha256DigestSize = 32;

using Sha256Digest = std::array<uint8_t, kSha256DigestSize>;

/// Incremental SHA-256: feed any number of update() calls, then finish().
/// Backed by OpenSSL's libcrypto. Throws tpu::Error if libcrypto fails.
class Sha256 {
public:
  Sha256();
  void update(const uint8_t *data, size_t size);
  /// Pads, returns the digest; the object must not be updated afterwards.
  Sha256Digest finish();

private:
  struct FreeContext {
    void operator()(evp_md_ctx_st *c) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> ctx_;
};

/// Digest of \p size bytes at \p data.
Sha256Digest sha256(const uint8_t *data, size_t size);

/// Lower-case hexadecimal of \p size bytes.
std::string hexString(const uint8_t *data, size_t size);
inline std::string hexString(const Sha256Digest &digest) {
  return hexString(digest.data(), digest.size());
}

} // namespace tpu::isa

#endif // TPU_ISA_SHA256_H
