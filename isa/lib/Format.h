//===- Format.h - Small text helpers shared inside the isa library -*- C++
//-*-===//
//
// Private to isa/lib (not installed): formatting used in messages and
// disassembly.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_LIB_FORMAT_H
#define TPU_ISA_LIB_FORMAT_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace tpu::isa {

/// "0x" followed by lower-case hex digits, e.g. 0x34000.
inline std::string formatHex(uint64_t v) {
  char buf[2 + 16 + 1];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace tpu::isa

#endif // TPU_ISA_LIB_FORMAT_H
