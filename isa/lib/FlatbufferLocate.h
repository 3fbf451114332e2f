//===- FlatbufferLocate.h - Where a FlatBuffer fails verification -*- C++
//-*-===//
//
// The FlatBuffers verifier answers only yes or no. After it has said no, this
// walk repeats its checks (FlatBuffers 2.0's rules: bounds, alignment,
// offsets, vtables, string terminators) over the schema's mini-reflection
// tables (flatc --reflect-names) and reports the first check that fails, as
// a field path and a byte offset. Internal to the isa library.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_LIB_FLATBUFFERLOCATE_H
#define TPU_ISA_LIB_FLATBUFFERLOCATE_H

#include "flatbuffers/minireflect.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tpu::isa::detail {

struct VerifyFailure {
  /// Offset inside the FlatBuffer of the byte the failing check reads.
  size_t offset = 0;
  /// e.g. "Model.net[0].parameter[0].output_tensor[1].name".
  std::string path;
  /// What is wrong there, e.g. "string runs past the end of the FlatBuffer".
  std::string what;
};

/// Walks the FlatBuffer \p buf of \p size bytes whose root table is described
/// by \p root (named \p rootName in paths). Returns the first failing check,
/// or nothing when every check passes (or the walk's budget runs out).
/// Never reads outside [buf, buf + size).
std::optional<VerifyFailure>
locateVerifyFailure(const uint8_t *buf, size_t size,
                    const flatbuffers::TypeTable *root, const char *rootName);

} // namespace tpu::isa::detail

#endif // TPU_ISA_LIB_FLATBUFFERLOCATE_H
