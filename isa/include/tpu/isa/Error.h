//===- Error.h - Error type of the isa library -------------------*- C++ -*-===//
//
// The isa library reports malformed input (a truncated bmodel, an unknown
// command head, a value that does not fit its field) by throwing tpu::Error
// with a message that names what was being read, where, and what is wrong.
// Tools catch it at the top, print it and exit non-zero.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_ERROR_H
#define TPU_ISA_ERROR_H

#include <stdexcept>
#include <string>

namespace tpu {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

} // namespace tpu

#endif // TPU_ISA_ERROR_H
