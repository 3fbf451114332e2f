//===- Format.h - Number formatting for messages and listings ---*- C++ -*-===//
//
// One spelling of hex numbers for every diagnostic and listing of the isa
// library, the tools and the simulator, and one source of the time stamps
// the tools write into their files.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_FORMAT_H
#define TPU_ISA_FORMAT_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

/// "" when SOURCE_DATE_EPOCH is unset, empty or a number of seconds since
/// 1970, else the message for it: reproducible-builds.org asks a tool to
/// stop on a malformed value rather than fall back to the clock. The tools
/// that stamp a time (tpuc, tpu-asm) check it before any work.
inline std::string sourceDateEpochError() {
  const char *epoch = std::getenv("SOURCE_DATE_EPOCH");
  if (!epoch || !*epoch)
    return "";
  char *end = nullptr;
  errno = 0;
  long long seconds = std::strtoll(epoch, &end, 10);
  // Digits only, and a time gmtime can give (years of 4 digits: before
  // 10000-01-01).
  if (*end != '\0' || errno == ERANGE || seconds < 0 ||
      seconds >= 253402300800LL || epoch[0] < '0' || epoch[0] > '9')
    return std::string("SOURCE_DATE_EPOCH='") + epoch +
           "' is not a number of seconds since 1970-01-01 UTC";
  return "";
}

/// The time a tool writes into a file (a bmodel's time field, a calibration
/// table's header), through strftime `format`: SOURCE_DATE_EPOCH in UTC when
/// it is set to a decimal number of seconds (reproducible builds: reruns give
/// identical files), else the local time now.
inline std::string formatTimestamp(const char *format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  const char *epoch = std::getenv("SOURCE_DATE_EPOCH");
  char *end = nullptr;
  long long seconds = epoch ? std::strtoll(epoch, &end, 10) : 0;
  if (epoch && end != epoch && *end == '\0') {
    t = static_cast<std::time_t>(seconds);
    gmtime_r(&t, &tm);
  } else {
    localtime_r(&t, &tm);
  }
  char buf[128] = {};
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

} // namespace tpu::isa

#endif // TPU_ISA_FORMAT_H
