//===- Format.h - Number formatting for messages and listings ---*- C++ -*-===//
//
// One spelling of hex numbers for every diagnostic and listing of the isa
// library, the tools and the simulator.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_FORMAT_H
#define TPU_ISA_FORMAT_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace tpu::isa {

/// "0x" followed by lower-case hex digits, zero-padded to at least
/// `minDigits` digits: formatHex(0x34000) is "0x34000", formatHex(7, 8) is
/// "0x00000007".
inline std::string formatHex(uint64_t v, unsigned minDigits = 1) {
  char buf[2 + 16 + 1];
  std::snprintf(buf, sizeof(buf), "0x%0*llx", static_cast<int>(minDigits),
                static_cast<unsigned long long>(v));
  return buf;
}

} // namespace tpu::isa

#endif // TPU_ISA_FORMAT_H
