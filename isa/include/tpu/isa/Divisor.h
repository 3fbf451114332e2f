//===- Divisor.h - Division by a chip constant ------------------*- C++ -*-===//
//
// The per-command work and cost functions (Work.h, Cost.h) divide by
// chip parameters (lanes, bank bytes, EU width) several times per command; a
// hardware divide costs tens of cycles and was most of their time. These
// divisors are powers of two on every real configuration, so the quotient is
// a shift; any other divisor takes the plain division (same results).
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_DIVISOR_H
#define TPU_ISA_DIVISOR_H

#include <cstdint>

namespace tpu::isa {

/// ceil(a / b) for b > 0.
inline uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
/// a rounded up to a multiple of b (b > 0).
inline uint64_t alignUp(uint64_t a, uint64_t b) { return ceilDiv(a, b) * b; }

/// Division by `d`, as a shift when `d` is a power of two.
class Divisor {
public:
  explicit Divisor(uint64_t d)
      : d_(d),
        shift_(d != 0 && (d & (d - 1)) == 0 ? unsigned(__builtin_ctzll(d))
                                            : kNoShift) {}

  uint64_t value() const { return d_; }
  /// x / d.
  uint64_t div(uint64_t x) const {
    return shift_ != kNoShift ? x >> shift_ : x / d_;
  }
  /// x % d.
  uint64_t mod(uint64_t x) const {
    return shift_ != kNoShift ? x & (d_ - 1) : x % d_;
  }
  /// ceil(x / d), as ceilDiv(x, d) computes it.
  uint64_t ceilDiv(uint64_t x) const { return div(x + d_ - 1); }
  /// x rounded up to a multiple of d, as alignUp(x, d) computes it.
  uint64_t alignUp(uint64_t x) const { return ceilDiv(x) * d_; }

private:
  static constexpr unsigned kNoShift = ~0u;
  uint64_t d_;
  unsigned shift_;
};

} // namespace tpu::isa

#endif // TPU_ISA_DIVISOR_H
