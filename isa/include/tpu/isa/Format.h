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
#include <optional>
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

/// SOURCE_DATE_EPOCH (reproducible builds: reruns give identical files) as
/// a time: nullopt when it is unset or empty, or malformed; then `error`,
/// when given, holds the message for a malformed value ("" otherwise).
/// reproducible-builds.org asks a tool to stop on a malformed value rather
/// than fall back to the clock: the tools that stamp a time (tpuc,
/// tpu-asm) check sourceDateEpochError before any work.
inline std::optional<std::time_t>
sourceDateEpoch(std::string *error = nullptr) {
  if (error)
    error->clear();
  const char *epoch = std::getenv("SOURCE_DATE_EPOCH");
  if (!epoch || !*epoch)
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  long long seconds = std::strtoll(epoch, &end, 10);
  // Digits only, and a time gmtime can give (years of 4 digits: before
  // 10000-01-01).
  if (*end != '\0' || errno == ERANGE || seconds < 0 ||
      seconds >= 253402300800LL || epoch[0] < '0' || epoch[0] > '9') {
    if (error)
      *error = std::string("SOURCE_DATE_EPOCH='") + epoch +
               "' is not a number of seconds since 1970-01-01 UTC";
    return std::nullopt;
  }
  return static_cast<std::time_t>(seconds);
}

/// "" when SOURCE_DATE_EPOCH is unset, empty or well formed, else the
/// message for it (sourceDateEpoch).
inline std::string sourceDateEpochError() {
  std::string error;
  sourceDateEpoch(&error);
  return error;
}

/// The time a tool writes into a file (a bmodel's time field, a calibration
/// table's header), through strftime `format`: SOURCE_DATE_EPOCH in UTC when
/// it is set (sourceDateEpoch), else the local time now.
inline std::string formatTimestamp(const char *format) {
  std::tm tm{};
  if (std::optional<std::time_t> epoch = sourceDateEpoch()) {
    gmtime_r(&*epoch, &tm);
  } else {
    std::time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
  }
  char buf[128] = {};
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

} // namespace tpu::isa

#endif // TPU_ISA_FORMAT_H
